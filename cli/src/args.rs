//! `--flag value` parsing with the standard library only: every flag takes one value
//! (`--flag value` or `--flag=value`), none may repeat, and unknown flags are errors.

use std::collections::HashMap;
use std::str::FromStr;

/// A usage mistake: reported with the subcommand's help, exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

/// What a subcommand accepts: flag names (without `--`) and its help text.
pub struct Spec {
    pub flags: &'static [&'static str],
    pub help: &'static str,
}

pub enum Parsed {
    Help,
    Flags(Flags),
}

pub struct Flags {
    values: HashMap<String, String>,
}

pub fn parse(args: &[String], spec: &Spec) -> Result<Parsed, UsageError> {
    let mut values = HashMap::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--help" || arg == "-h" {
            return Ok(Parsed::Help);
        }
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(UsageError(format!(
                "unexpected argument {arg:?} (flags are --name value)"
            )));
        };
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name.to_string(), value.to_string()),
            None => {
                let value = it
                    .next()
                    .ok_or_else(|| UsageError(format!("--{flag} needs a value")))?;
                (flag.to_string(), value.clone())
            }
        };
        if !spec.flags.contains(&name.as_str()) {
            return Err(UsageError(format!("unknown flag --{name}")));
        }
        if values.insert(name.clone(), value).is_some() {
            return Err(UsageError(format!("--{name} is given twice")));
        }
    }
    Ok(Parsed::Flags(Flags { values }))
}

impl Flags {
    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    pub fn optional(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn required(&self, name: &str) -> Result<&str, UsageError> {
        self.optional(name)
            .ok_or_else(|| UsageError(format!("--{name} is required")))
    }

    /// The value of `--name` parsed as T, if given.
    pub fn parsed<T: FromStr>(&self, name: &str, what: &str) -> Result<Option<T>, UsageError> {
        self.optional(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| UsageError(format!("--{name} must be {what}, got {v:?}")))
            })
            .transpose()
    }

    pub fn parsed_or<T: FromStr>(
        &self,
        name: &str,
        what: &str,
        default: T,
    ) -> Result<T, UsageError> {
        Ok(self.parsed(name, what)?.unwrap_or(default))
    }

    pub fn required_parsed<T: FromStr>(&self, name: &str, what: &str) -> Result<T, UsageError> {
        self.required(name)?;
        Ok(self.parsed(name, what)?.expect("checked present"))
    }
}
