//! The session, driven as the worker drives it: messages in, replies out, no worker.

use super::*;
use engine::inspect::Inspection;
use protocol::DEFAULT_CORPUS;
use std::collections::BTreeSet;

fn started() -> Session {
    let mut s = Session::default();
    let replies = s.handle(
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings: LabSettings::default(),
        },
        Vec::new(),
    );
    assert!(matches!(replies[0].message, FromWorker::Ready { .. }));
    s
}

fn losses(replies: &[Reply]) -> Vec<f32> {
    replies
        .iter()
        .flat_map(|r| match &r.message {
            FromWorker::Progress { points, .. } => points.iter().map(|p| p.loss).collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn generated(replies: &[Reply]) -> Option<(usize, bool, usize)> {
    replies.iter().find_map(|r| match &r.message {
        FromWorker::Generated {
            steps,
            done,
            inspection,
            prompt,
        } => {
            assert_eq!(inspection.tokens.len(), prompt.len() + steps.len());
            Some((steps.len(), *done, inspection.tokens.len()))
        }
        _ => None,
    })
}

/// A decoder trains on next tokens, then generates a token per call, each with the
/// inspection of the sequence so far; Play ends a generation; an encoder cannot generate.
#[test]
fn a_decoder_trains_then_generates_a_token_at_a_time() {
    let mut s = Session::default();
    let settings = LabSettings {
        objective: engine::train::Objective::NextToken,
        ..LabSettings::default()
    };
    let corpus = DEFAULT_CORPUS.to_string();
    let replies = s.handle(ToWorker::Reset { corpus, settings }, Vec::new());
    let FromWorker::Ready { info, .. } = &replies[0].message else {
        panic!("not ready")
    };
    assert!(info.kind.decoder() && info.kind.has_heads());
    let trained = losses(&s.train(30));
    assert!(
        trained.len() == 30 && trained[29] < trained[0],
        "{trained:?}"
    );
    let generate = |s: &mut Session, max_new| {
        s.handle(
            ToWorker::Generate {
                prompt: "the cat".into(),
                settings: protocol::GenerationSettings {
                    max_new,
                    ..Default::default()
                },
            },
            Vec::new(),
        )
    };
    // [CLS] the cat: 3 prompt tokens, one new token in the first reply.
    assert_eq!(generated(&generate(&mut s, 4)), Some((1, false, 4)));
    assert!(s.generating());
    let mut made = 1;
    while s.generating() {
        let (n, done, _) = generated(&s.generation_step()).unwrap();
        made = n;
        assert_eq!(done, !s.generating());
    }
    assert!((1..=4).contains(&made));
    generate(&mut s, 4);
    s.handle(ToWorker::Play, Vec::new());
    assert!(!s.generating(), "training must end a generation");
    let replies = generate(&mut s, 0);
    assert!(
        matches!(&replies[0].message, FromWorker::Failed(e) if e.to_string().contains("max new tokens is 0"))
    );
    let mut encoder = started();
    let replies = generate(&mut encoder, 3);
    assert!(
        matches!(&replies[0].message, FromWorker::Failed(e) if e.to_string().contains("needs a decoder"))
    );
}

/// An encoder–decoder (Sequence to sequence, Reverse) trains, inspects the Sentence as its
/// source and the Target as its decoder's input, generates a target a token at a time, and
/// keeps, restores and rewinds its History with both halves.
#[test]
fn an_encoder_decoder_trains_inspects_generates_and_keeps_both_halves() {
    let settings = LabSettings {
        task: Some(engine::seq2seq::Task::Reverse),
        ..LabSettings::default()
    };
    let reset = |settings: LabSettings| {
        let mut s = Session::default();
        let replies = s.handle(
            ToWorker::Reset {
                corpus: DEFAULT_CORPUS.into(),
                settings,
            },
            Vec::new(),
        );
        (s, replies)
    };
    let (mut s, replies) = reset(settings.clone());
    let FromWorker::Ready {
        info, trainable, ..
    } = &replies[0].message
    else {
        panic!("not ready: {:?}", replies[0].message)
    };
    assert!(info.kind.encoder_decoder() && !info.kind.decoder() && trainable.is_ok());
    assert!(
        info.name.contains("encoder–decoder · Reverse"),
        "{}",
        info.name
    );
    let trained = losses(&s.train(30));
    assert!(
        trained.len() == 30 && trained[29] < trained[0],
        "{trained:?}"
    );
    let probe = ProbeInput {
        text: "the sky is blue".into(),
        target: "blue is".into(),
        ..ProbeInput::default()
    };
    let inspect = |s: &mut Session, at| {
        inspected(&s.handle(
            ToWorker::Inspect {
                probe: probe.clone(),
                at,
            },
            Vec::new(),
        ))
        .0
    };
    let seen = inspect(&mut s, None);
    let source = seen.source.as_deref().expect("the encoder's inspection");
    assert_eq!(
        source.tokens,
        ["[CLS]", "the", "sky", "is", "blue", "[SEP]"]
    );
    assert_eq!(seen.tokens, ["[CLS]", "blue", "is"]);
    let cross = &seen.trace.layers[1].cross_heads[2];
    // Tt × Ts: target rows, source columns; every real source token visible to every row.
    assert_eq!((cross.weights.rows, cross.weights.cols), (3, 6));
    assert!(cross.mask.data.iter().all(|m| *m == 0.0));
    assert!(seen.mlm_logits.is_none() && source.mlm_logits.is_none());
    // "Pad to" pads the source: every target row gives its [PAD] columns no weight.
    let padded = inspected(&s.handle(
        ToWorker::Inspect {
            probe: ProbeInput {
                pad_to: Some(8),
                ..probe.clone()
            },
            at: None,
        },
        Vec::new(),
    ))
    .0;
    let cross = &padded.trace.layers[0].cross_heads[0];
    assert_eq!((cross.weights.rows, cross.weights.cols), (3, 8));
    for i in 0..3 {
        for j in 0..8 {
            let m = cross.mask.data[i * 8 + j];
            assert_eq!(m == f32::NEG_INFINITY, j >= 6, "({i}, {j})");
            assert_eq!(cross.weights.data[i * 8 + j] == 0.0, j >= 6, "({i}, {j})");
        }
    }

    // Generation: the source through the encoder, the target from [CLS].
    let replies = s.handle(
        ToWorker::Generate {
            prompt: "the sky is blue".into(),
            settings: protocol::GenerationSettings {
                max_new: 3,
                ..Default::default()
            },
        },
        Vec::new(),
    );
    let first = generated(&replies).unwrap();
    assert_eq!(first, (1, first.1, 2));
    // Beside the cache: the source's cross-attention K and V, L × 2 × Ts × C × 4 bytes.
    let cross_bytes = replies.iter().find_map(|r| match &r.message {
        FromWorker::Generated { steps, .. } => Some(steps[0].cross_kv_bytes),
        _ => None,
    });
    assert_eq!(cross_bytes, Some(Some(2 * 2 * 6 * 64 * 4)));
    while s.generating() {
        s.generation_step();
    }
    let replies = s.handle(
        ToWorker::Generate {
            prompt: "  ".into(),
            settings: protocol::GenerationSettings::default(),
        },
        Vec::new(),
    );
    assert!(
        matches!(&replies[0].message, FromWorker::Failed(e) if e.to_string().contains("source sentence"))
    );

    // Kept and reloaded: the same weights, the History with both halves.
    let (mut kept, none) = s.kept_models().unwrap();
    assert!(none.is_none());
    let history = s.history_to_keep(&BTreeSet::new()).unwrap();
    let steps = s.lab.as_ref().unwrap().history.steps();
    assert_eq!(history.index.steps, steps);
    let attachments = ModelBundle::detach_both(&mut kept, None);
    let mut back = Session::default();
    let replies = back.handle(
        ToWorker::Load {
            bundle: kept,
            compare: None,
            corpus: DEFAULT_CORPUS.into(),
            settings: settings.clone(),
        },
        attachments,
    );
    assert!(
        matches!(&replies[0].message, FromWorker::Ready { info, step: 30, .. } if info.kind.encoder_decoder()),
        "{:?}",
        replies[0].message
    );
    back.restore_history(back.generation(), &history.index, history.new_entries);
    assert_eq!(back.lab.as_ref().unwrap().history.steps(), steps);
    assert_eq!(inspect(&mut back, None), inspect(&mut s, None));
    let at = steps.len() - 2;
    assert_eq!(inspect(&mut back, Some(at)), inspect(&mut s, Some(at)));
    assert_ne!(inspect(&mut s, Some(at)), inspect(&mut s, None));

    // The kept run trains on exactly as if it had never stopped (both optimisers' moments).
    assert_eq!(losses(&s.train(2)), losses(&back.train(2)));
    assert_eq!(inspect(&mut back, None), inspect(&mut s, None));

    // Rewind takes both halves back.
    s.handle(ToWorker::Rewind { at }, Vec::new());
    assert_eq!(s.lab.as_ref().unwrap().step_count(), steps[at]);
    assert_eq!(inspect(&mut s, None), inspect(&mut back, Some(at)));
    assert!(losses(&s.train(2)).iter().all(|l| l.is_finite()));

    // Compare trains two one-model BERTs: with an encoder–decoder it is a message.
    let (_, replies) = reset(LabSettings {
        compare: Some(protocol::Architecture::default()),
        ..settings
    });
    assert!(
        matches!(&replies[0].message, FromWorker::Failed(e) if e.to_string().contains("turn Compare off")),
        "{:?}",
        replies[0].message
    );
}

fn comparing() -> LabSettings {
    LabSettings {
        compare: Some(protocol::Architecture {
            positions: engine::config::PositionEmbeddingType::Rotary,
            kv_heads: Some(1),
            ..protocol::Architecture::default()
        }),
        ..LabSettings::default()
    }
}

fn points_b(replies: &[Reply]) -> Vec<CurvePoint> {
    replies
        .iter()
        .flat_map(|r| match &r.message {
            FromWorker::Progress { points_b, .. } => points_b.clone(),
            _ => Vec::new(),
        })
        .collect()
}

/// The first inspection among `replies`, with Compare's model B's beside it.
pub(crate) fn inspected(replies: &[Reply]) -> (Inspection, Option<Inspection>) {
    replies
        .iter()
        .find_map(|r| match &r.message {
            FromWorker::Inspected {
                result: Ok(a),
                compare,
                ..
            } => Some((a.clone(), compare.clone().map(Result::unwrap))),
            _ => None,
        })
        .expect("an inspection")
}

/// `s` as a reload brings it back: its kept models loaded, then its kept History.
fn reloaded(s: &Session) -> Session {
    let (mut kept_a, mut kept_b) = s.kept_models().unwrap();
    let history = s.history_to_keep(&BTreeSet::new()).unwrap();
    let attachments = ModelBundle::detach_both(&mut kept_a, kept_b.as_mut());
    let mut back = Session::default();
    back.handle(
        ToWorker::Load {
            bundle: kept_a,
            compare: kept_b,
            corpus: DEFAULT_CORPUS.into(),
            settings: comparing(),
        },
        attachments,
    );
    back.restore_history(back.generation(), &history.index, history.new_entries);
    back
}

#[test]
fn compare_trains_model_b_in_lockstep_and_keeps_restores_and_rewinds_both() {
    let mut s = Session::default();
    let replies = s.handle(
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings: comparing(),
        },
        Vec::new(),
    );
    let FromWorker::Ready {
        compare: Some(b), ..
    } = &replies[0].message
    else {
        panic!("no model B")
    };
    assert_eq!(b.architecture, comparing().compare.unwrap());
    let (_, b_seen) = inspected(&replies);
    assert!(b_seen.is_some(), "the probe through B too");

    let replies = s.train(10);
    let (a, b) = (losses(&replies), points_b(&replies));
    assert_eq!(b.len(), 10);
    assert_eq!(
        b.iter().map(|p| p.step).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    assert_ne!(
        a,
        b.iter().map(|p| p.loss).collect::<Vec<_>>(),
        "two models"
    );
    // B alone, on its own batches, learns differently: the lockstep is not for nothing.
    let mut alone = Session::default();
    alone.handle(
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings: comparing().for_model_b().unwrap(),
        },
        Vec::new(),
    );
    assert_ne!(
        losses(&alone.train(10)),
        b.iter().map(|p| p.loss).collect::<Vec<_>>()
    );

    // Kept and restored (a reload): both train on exactly as before.
    assert!(s.kept_models().unwrap().1.unwrap().training_state.is_some());
    let mut back = reloaded(&s);
    let (next, next_b) = (s.train(3), back.train(3));
    assert_eq!(losses(&next), losses(&next_b));
    assert_eq!(points_b(&next), points_b(&next_b));
    assert_eq!(points_b(&next_b).len(), 3);

    // One History for both: step 5 of each comes back, from the restored History too.
    let at_5 = |s: &Session| inspected(&[s.inspect(&ProbeInput::default(), Some(1))]);
    let (a5, b5) = at_5(&s);
    assert_eq!(at_5(&back), (a5.clone(), b5.clone()));
    let replies = back.handle(ToWorker::Rewind { at: 1 }, Vec::new());
    assert_eq!(inspected(&replies), (a5, b5));
    assert_eq!(back.lab_b.as_ref().unwrap().step_count(), 5);
    assert_eq!(points_b(&back.train(1))[0].step, 6);

    // A model B left a step behind (a NaN in B after A's step), kept and reloaded: Play
    // answers with a stop, which the page offers to rewind, and Rewind lines them up.
    back.lab.as_mut().unwrap().step().unwrap();
    let (kept_a, kept_b) = back.kept_models().unwrap();
    assert_eq!(kept_b.unwrap().step + 1, kept_a.step);
    let mut behind = reloaded(&back);
    let replies = behind.handle(ToWorker::Play, Vec::new());
    assert!(
        matches!(&replies[0].message, FromWorker::Stopped { reason, .. } if reason.to_string().contains("model B stopped")),
        "{:?}",
        replies[0].message
    );
    assert!(!behind.playing());
    behind.handle(ToWorker::Rewind { at: 0 }, Vec::new());
    assert_eq!(behind.lab_b.as_ref().unwrap().step_count(), 0);
    behind.handle(ToWorker::Play, Vec::new());
    assert!(behind.playing());

    // Download: both models' files.
    let replies = behind.handle(ToWorker::Download(FilesFor::Checkpoint), Vec::new());
    assert!(matches!(
        &replies[0].message,
        FromWorker::Checkpoint {
            compare: Some(ModelBundle { step: 0, .. }),
            ..
        }
    ));
    assert_eq!(replies[0].attachments.len(), 4);
}

#[test]
fn play_pause_and_step_move_the_state_and_the_step_count() {
    let mut s = started();
    s.handle(ToWorker::Play, Vec::new());
    assert!(s.playing());
    assert_eq!(losses(&s.train(3)).len(), 3);
    s.handle(ToWorker::Pause, Vec::new());
    assert!(!s.playing());
    let replies = s.handle(ToWorker::Step, Vec::new());
    let steps: Vec<u64> = replies
        .iter()
        .filter_map(|r| match &r.message {
            FromWorker::Inspected { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        vec![4],
        "one Step after three played steps is step 4"
    );
}

#[test]
fn reset_with_the_same_seed_gives_the_same_losses() {
    let mut a = started();
    let first = losses(&a.train(4));
    a.handle(
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings: LabSettings::default(),
        },
        Vec::new(),
    );
    assert_eq!(losses(&a.train(4)), first);
    let other = LabSettings {
        seed: 1,
        ..LabSettings::default()
    };
    a.handle(
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings: other,
        },
        Vec::new(),
    );
    assert_ne!(losses(&a.train(4)), first);
}

#[test]
fn a_huge_learning_rate_stops_by_itself_and_rewind_recovers() {
    let mut s = started();
    let wild = LabSettings {
        learning_rate: 1000.0,
        ..LabSettings::default()
    };
    s.handle(ToWorker::Tune(wild), Vec::new());
    s.handle(ToWorker::Play, Vec::new());
    let mut stopped = None;
    for _ in 0..50 {
        let replies = s.train(5);
        if let Some(r) = replies
            .iter()
            .find(|r| matches!(r.message, FromWorker::Stopped { .. }))
        {
            stopped = Some(r.message.clone());
            break;
        }
    }
    assert!(
        matches!(stopped, Some(FromWorker::Stopped { .. })),
        "lr 1000 never stopped"
    );
    assert!(!s.playing());
    s.handle(ToWorker::Tune(LabSettings::default()), Vec::new());
    let replies = s.handle(ToWorker::Rewind { at: 0 }, Vec::new());
    assert!(replies.iter().any(|r| matches!(
        &r.message,
        FromWorker::Inspected {
            step: 0,
            result: Ok(_),
            ..
        }
    )));
    assert!(losses(&s.train(2)).iter().all(|l| l.is_finite()));
}

#[test]
fn requests_before_a_model_fail_politely() {
    let mut s = Session::default();
    let replies = s.handle(ToWorker::Play, Vec::new());
    assert!(matches!(replies[0].message, FromWorker::Failed(_)));
    let replies = s.handle(
        ToWorker::Reset {
            corpus: "just one line".into(),
            settings: LabSettings::default(),
        },
        Vec::new(),
    );
    assert!(
        matches!(&replies[0].message, FromWorker::Failed(e) if e.to_string().contains("sentence"))
    );
}

#[test]
fn a_probe_sent_before_the_model_waits_for_it() {
    let mut s = Session::default();
    let probe = ProbeInput {
        text: "the cat sleeps".into(),
        ..ProbeInput::default()
    };
    let replies = s.handle(
        ToWorker::Inspect {
            probe: probe.clone(),
            at: None,
        },
        Vec::new(),
    );
    assert!(replies.is_empty(), "no error before a model exists");
    let replies = s.handle(
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings: LabSettings::default(),
        },
        Vec::new(),
    );
    let tokens = replies.iter().find_map(|r| match &r.message {
        FromWorker::Inspected { result: Ok(i), .. } => Some(i.tokens.clone()),
        _ => None,
    });
    assert_eq!(
        tokens.as_deref().map(|t| &t[1..4]),
        Some(&["the".to_string(), "cat".into(), "sleeps".into()][..])
    );
}

#[test]
fn a_model_kept_in_the_browser_trains_on_exactly_as_before() {
    let mut a = started();
    a.train(3);
    let for_user = a.handle(ToWorker::Download(FilesFor::Notebook), Vec::new());
    assert!(matches!(
        for_user[0].message,
        FromWorker::Checkpoint {
            bundle: ModelBundle { step: 3, .. },
            compare: None,
            files_for: FilesFor::Notebook,
        }
    ));
    assert!(
        !for_user[0].attachments[0].is_empty() && for_user[0].attachments[1].is_empty(),
        "the user gets the weights, not the training state"
    );
    let (kept, _) = a.kept_models().unwrap();
    assert!(kept.training_state.is_some());
    let restore = |mut bundle: ModelBundle| {
        let mut b = Session::default();
        let attachments = bundle.detach();
        let load = ToWorker::Load {
            bundle,
            compare: None,
            corpus: DEFAULT_CORPUS.into(),
            settings: LabSettings::default(),
        };
        let replies = b.handle(load, attachments);
        let FromWorker::Ready {
            step: 3,
            notice: None,
            info,
            ..
        } = &replies[0].message
        else {
            panic!("not ready at step 3");
        };
        (b, info.tokenizer.clone())
    };
    assert!(kept.word_level, "a model made here splits whole words");
    let (mut b, tokenizer) = restore(kept.clone());
    assert_eq!(
        tokenizer, "word-level",
        "the kept model keeps its tokenizer"
    );
    let next = losses(&a.train(2));
    assert_eq!(losses(&b.train(2)), next);

    // The weights alone train on differently: the comparison above can fail.
    let (mut c, _) = restore(ModelBundle {
        training_state: None,
        ..kept.clone()
    });
    assert_ne!(losses(&c.train(2)), next);
    // Without the flag, the same files read as WordPiece (what a reload used to show).
    let (_, tokenizer) = restore(ModelBundle {
        word_level: false,
        ..kept
    });
    assert_eq!(tokenizer, "WordPiece");
}

#[test]
fn a_kept_history_comes_back_in_front_of_the_slider() {
    let mut a = started();
    a.train(20);
    let all = a.history_to_keep(&BTreeSet::new()).unwrap();
    assert_eq!(all.index.steps, [0, 5, 10, 15, 20]);
    assert_eq!(all.new_entries.len(), 5);
    let stored: BTreeSet<u64> = [0, 5, 10].into();
    let rest = a.history_to_keep(&stored).unwrap();
    assert_eq!(
        rest.new_entries.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        [15, 20],
        "only what is not stored yet"
    );

    let (mut bundle, _) = a.kept_models().unwrap();
    let mut b = Session::default();
    let attachments = bundle.detach();
    b.handle(
        ToWorker::Load {
            bundle,
            compare: None,
            corpus: DEFAULT_CORPUS.into(),
            settings: LabSettings::default(),
        },
        attachments,
    );
    let stale = b.restore_history(b.generation() - 1, &all.index, all.new_entries.clone());
    assert!(
        stale.is_empty(),
        "an earlier model's History is not this one's"
    );
    let replies = b.restore_history(b.generation(), &all.index, all.new_entries.clone());
    assert!(matches!(
        &replies[0].message,
        FromWorker::History { steps } if steps == &[0, 5, 10, 15, 20]
    ));
    let at = |s: &Session, i: usize| match s.inspect(&ProbeInput::default(), Some(i)).message {
        FromWorker::Inspected { result: Ok(i), .. } => i,
        _ => panic!("no inspection"),
    };
    assert_eq!(at(&b, 0), at(&a, 0), "the weights at step 0 came back");
    assert_eq!(at(&b, 2), at(&a, 2));
    assert_ne!(at(&b, 0), at(&b, 2), "the comparison above can fail");
}
