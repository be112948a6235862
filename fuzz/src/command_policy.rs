//! The command-policy judge: `allowed_commands`/`denied_commands` rules
//! and a command line, both from the input (rules one per line).
//!
//! Must hold: the judge is a function of its input (the same verdict
//! twice); a denial names one of the deny rules; rules only narrow as
//! they are added — another allow rule never takes an allowed line's
//! allowance away, another deny rule never allows a line that was not.
//! (`command_policy_bash` checks the judge against what bash runs.)

use roost_commands::policy::{CommandRules, Verdict};

use crate::input::Input;

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let allowed: Vec<String> = input.text().lines().map(str::to_owned).collect();
    let denied: Vec<String> = input.text().lines().map(str::to_owned).collect();
    let extra = input.text();
    let line = String::from_utf8_lossy(input.rest()).into_owned();
    let Ok(rules) = CommandRules::new(&allowed, &denied) else {
        return;
    };
    let first = rules.judge(&line);
    assert_eq!(
        first,
        rules.judge(&line),
        "the same line judged twice differently"
    );
    if let Verdict::Denied { rule, .. } = &first.verdict {
        assert!(denied.contains(rule), "denied by {rule:?}, not a deny rule");
    }
    let allowed_now = first.verdict == Verdict::Allowed;
    if !extra.trim().is_empty() {
        let mut more = allowed.clone();
        more.push(extra.clone());
        if let Ok(wider) = CommandRules::new(&more, &denied)
            && allowed_now
        {
            assert_eq!(
                wider.judge(&line).verdict,
                Verdict::Allowed,
                "another allow rule took the allowance away"
            );
        }
        let mut fewer = denied.clone();
        fewer.push(extra);
        if let Ok(narrower) = CommandRules::new(&allowed, &fewer)
            && narrower.judge(&line).verdict == Verdict::Allowed
        {
            assert!(allowed_now, "another deny rule allowed a line");
        }
    }
}
