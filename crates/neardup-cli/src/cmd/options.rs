//! `neardup options`: the library's option table, and the help of every flag in it.

use std::io::Write;

use clap::{Args, Command};
use neardup::{option_table, OptionGroup, OptionRow};

use super::output_error;
use crate::Failure;

/// Options of `neardup options`.
#[derive(Debug, Args)]
pub struct OptionsArgs {
    /// Print the table as JSON: a list of rows {"name", "group", "kind", "default", "min",
    /// "max", "choices", "doc", "cli", "python", "http", "spark"} (a surface's spelling, or null
    /// where it lacks the option), as Python's neardup.options() returns it.
    #[arg(long)]
    json: bool,
}

/// Prints the option table.
pub fn run(args: OptionsArgs) -> Result<(), Failure> {
    let table = option_table();
    let mut out = std::io::stdout().lock();
    if args.json {
        let text = serde_json::to_string_pretty(&table).map_err(anyhow::Error::from)?;
        writeln!(out, "{text}").map_err(output_error)?;
        return Ok(());
    }
    for group in
        [OptionGroup::Pipeline, OptionGroup::Search, OptionGroup::Passages, OptionGroup::Query]
    {
        let title = match group {
            OptionGroup::Pipeline => "Pipeline (every command; Python's keywords)",
            OptionGroup::Search => "Search (dedup, report; collections)",
            OptionGroup::Passages => "Passages (overlap; passage collections)",
            _ => "One search or check (the service, Python's Index)",
        };
        writeln!(out, "{title}:").map_err(output_error)?;
        for r in table.iter().filter(|r| r.group == group) {
            let flag = r.cli.as_deref().unwrap_or("-");
            let default = if r.default.is_null() {
                String::new()
            } else {
                format!(" [default: {}]", shown(r))
            };
            writeln!(out, "  {:<22} {:<26} {}{default}", r.name, flag, r.takes)
                .map_err(output_error)?;
            writeln!(out, "  {:<22} {}", "", r.doc).map_err(output_error)?;
        }
        writeln!(out).map_err(output_error)?;
    }
    Ok(())
}

/// A default as a user types it: `0.8`, `simplified`, `zh,en`.
fn shown(r: &OptionRow) -> String {
    match &r.default {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => {
            let names: Vec<String> =
                items.iter().map(|v| v.as_str().map_or(v.to_string(), str::to_string)).collect();
            if names.is_empty() {
                "none".into()
            } else {
                names.join(",")
            }
        }
        v => v.to_string(),
    }
}

/// The groups of the table whose flags `command` takes (its subcommands too); a command not
/// named here has flags of its own only (`params --weights` are LSH weights, not the
/// pipeline's).
fn groups_of(command: &str) -> &'static [OptionGroup] {
    match command {
        "overlap" => &[OptionGroup::Passages],
        "dedup" | "report" => &[OptionGroup::Pipeline, OptionGroup::Search],
        "fingerprint" | "compare" | "spec" | "idf" => &[OptionGroup::Pipeline],
        _ => &[],
    }
}

/// The command line with the help of every flag in the option table taken from it: its doc,
/// what it takes, and its default (shown for a flag that is `None` unless given too, so that a
/// saved index's own setting stands when the flag is left out); a choice takes the table's
/// values.
pub fn with_table_help(cli: Command) -> Command {
    let table = option_table();
    let names: Vec<String> = cli.get_subcommands().map(|c| c.get_name().to_string()).collect();
    names.into_iter().fold(cli, |cli, name| {
        let groups = groups_of(&name);
        cli.mut_subcommand(&name, |sub| from_table(sub, &table, groups))
    })
}

/// [`with_table_help`] on one command and its subcommands.
fn from_table(mut sub: Command, table: &[OptionRow], groups: &[OptionGroup]) -> Command {
    if groups.is_empty() {
        return sub;
    }
    let longs: Vec<(String, String)> = sub
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| (a.get_id().to_string(), l.to_string())))
        .collect();
    for (id, long) in longs {
        let flag = format!("--{long}");
        let Some(row) = table
            .iter()
            .find(|r| groups.contains(&r.group) && r.cli.as_deref() == Some(flag.as_str()))
        else {
            continue;
        };
        let help = help_of(row, long.starts_with("no-"));
        let choices = row.choices.clone();
        sub = sub.mut_arg(id.as_str(), |a| {
            let a = a.help(help);
            // A switch takes no value: it has no default or values to hide.
            if !a.get_action().takes_values() {
                return a;
            }
            let a = a.hide_default_value(true);
            // A choice's values are the table's (clap checks them, and names them in its
            // error); the help says them once.
            match choices {
                Some(values) => a
                    .value_parser(clap::builder::PossibleValuesParser::new(values))
                    .hide_possible_values(true),
                None => a,
            }
        });
    }
    let names: Vec<String> = sub.get_subcommands().map(|c| c.get_name().to_string()).collect();
    names
        .into_iter()
        .fold(sub, |sub, name| sub.mut_subcommand(&name, |s| from_table(s, table, groups)))
}

/// The help of a flag: the option's doc, what it takes, and its default (for a `--no-` switch
/// of an option on by default, what leaving it out means).
fn help_of(row: &OptionRow, negated: bool) -> String {
    let mut help = row.doc.to_string();
    if let Some(c) = help.get(..1) {
        help.replace_range(..1, &c.to_uppercase());
    }
    if negated {
        return format!("Turn off: {help} [default: on]");
    }
    match row.kind {
        neardup::OptionKind::Flag => {}
        _ => help.push_str(&format!("; {}", row.takes)),
    }
    if !row.default.is_null() && row.kind != neardup::OptionKind::Flag {
        help.push_str(&format!(" [default: {}]", shown(row)));
    }
    help
}
