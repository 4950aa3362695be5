//! A run's measured setting and the flags that leave it, noted on stderr (`--task repeat`,
//! the default run).

/// A run's measured setting (Repeat's, the default run's) and the flags that leave it: each
/// flag's value, or the setting's, a value other than the setting's noted.
pub(crate) struct Setting {
    /// "the Repeat setting's", "the default run's".
    whose: &'static str,
    /// What the setting is, after its value: ", the one measured to form induction heads".
    why: &'static str,
    pub notes: Vec<String>,
}

impl Setting {
    pub fn new(whose: &'static str, why: &'static str) -> Setting {
        Setting {
            whose,
            why,
            notes: Vec::new(),
        }
    }

    /// `flag`'s value (`name`), or the setting's; a value other than the setting's is noted.
    pub fn chosen<T: PartialEq + std::fmt::Display + Copy>(
        &mut self,
        flag: Option<T>,
        setting: T,
        name: &str,
    ) -> T {
        match flag {
            Some(v) if v != setting => {
                self.leaves(format!("{name} {v}"), setting);
                v
            }
            Some(v) => v,
            None => setting,
        }
    }

    /// Notes that `what` ("--lr 0.002") leaves the setting's `setting`.
    pub fn leaves(&mut self, what: String, setting: impl std::fmt::Display) {
        self.notes.push(format!(
            "{what} is not {} ({setting}){}",
            self.whose, self.why
        ));
    }

    /// The notes on stderr.
    pub fn say(&self) {
        for note in &self.notes {
            eprintln!("note: {note}");
        }
    }
}
