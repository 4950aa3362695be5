//! Flags through clap, with the project's usage wording: a clap error becomes one sentence
//! ("unknown flag --colour", "--text is required", "--pad-to must be a whole number, got …"),
//! printed with the command's usage line, exit code 2.
//!
//! Every value is read as an OS string and converted here, so a non-UTF-8 byte in any argument is
//! a usage error naming the flag, never a panic.

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use std::ffi::OsString;
use std::str::FromStr;

/// A usage mistake found after parsing, one clap cannot state (a value out of range, a flag that
/// does not suit the checkpoint or another flag's value): reported like clap's own, with
/// `command`'s usage.
#[derive(Debug)]
pub struct UsageError {
    pub message: String,
    pub command: &'static str,
}

impl UsageError {
    pub fn new(command: &'static str, message: impl Into<String>) -> Self {
        UsageError {
            message: message.into(),
            command,
        }
    }
}

/// A flag's value parsed as T; `what` completes "--flag must be …" when it is not one.
pub fn value<T>(what: &'static str) -> impl TypedValueParser<Value = T>
where
    T: FromStr + Clone + Send + Sync + 'static,
{
    OsStringValueParser::new().try_map(move |s: OsString| {
        s.to_str()
            .and_then(|s| s.parse::<T>().ok())
            .ok_or(Invalid(what))
    })
}

/// The error of [`value`]: what the value must be (the flag and the value are clap's context).
#[derive(Debug)]
struct Invalid(&'static str);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "must be {}", self.0)
    }
}

impl std::error::Error for Invalid {}

/// The text of a clap error in the project's wording. `args` are the raw arguments, to show the
/// one that is not UTF-8 (clap's own error does not say which).
pub fn message(e: &clap::Error, args: &[OsString]) -> String {
    let string = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(s)) => s.first().cloned(),
        _ => None,
    };
    let strings = |kind| match e.get(kind) {
        Some(ContextValue::Strings(s)) => s.clone(),
        Some(ContextValue::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    // "--mask <MASK>" → "--mask"
    let flag = |s: String| s.split_whitespace().next().unwrap_or_default().to_string();
    let arg = string(ContextKind::InvalidArg)
        .map(flag)
        .unwrap_or_default();
    let value = string(ContextKind::InvalidValue).unwrap_or_default();
    match e.kind() {
        ErrorKind::UnknownArgument if arg.starts_with("--") => {
            let name = arg.split('=').next().unwrap_or_default();
            let hint = string(ContextKind::SuggestedArg)
                .map(|s| format!(" (did you mean {}?)", flag(s)))
                .unwrap_or_default();
            format!("unknown flag {name}{hint}")
        }
        ErrorKind::UnknownArgument => {
            format!("unexpected argument {arg:?} (flags are --name value)")
        }
        ErrorKind::InvalidSubcommand => format!(
            "unknown command {:?}",
            string(ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "no command given".into()
        }
        ErrorKind::MissingRequiredArgument => {
            // A required group is "<--model <DIR>|--init <CONFIG.json>>": "--model or --init".
            let name = |s: String| match s.strip_prefix('<').and_then(|g| g.strip_suffix('>')) {
                Some(group) if group.contains('|') => {
                    let flags: Vec<String> = group.split('|').map(|a| flag(a.into())).collect();
                    flags.join(" or ")
                }
                _ => flag(s),
            };
            let names: Vec<String> = strings(ContextKind::InvalidArg)
                .into_iter()
                .map(name)
                .collect();
            match names.len() {
                1 => format!("{} is required", names[0]),
                _ => format!("{} are required", names.join(", ")),
            }
        }
        ErrorKind::ArgumentConflict => {
            let prior = string(ContextKind::PriorArg).map(flag).unwrap_or_default();
            if prior == arg {
                format!("{arg} is given twice")
            } else {
                format!("{arg} does not go with {prior}")
            }
        }
        ErrorKind::InvalidValue if value.is_empty() => format!("{arg} needs a value"),
        ErrorKind::InvalidValue => {
            let valid = strings(ContextKind::ValidValue);
            let valid = match valid.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => "something else".into(),
            };
            format!("{arg} must be {valid}, got {value:?}")
        }
        ErrorKind::ValueValidation => {
            let why = std::error::Error::source(e)
                .map(|s| s.to_string())
                .unwrap_or_else(|| "is not valid".into());
            format!("{arg} {why}, got {value:?}")
        }
        ErrorKind::InvalidUtf8 => match args.iter().find(|a| a.to_str().is_none()) {
            Some(a) => format!(
                "argument {:?} is not valid UTF-8",
                a.to_string_lossy().into_owned()
            ),
            None => "an argument is not valid UTF-8".into(),
        },
        _ => {
            // clap's own sentence: the first line of its rendering, without "error: ".
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or_default();
            line.strip_prefix("error: ").unwrap_or(line).to_string()
        }
    }
}
