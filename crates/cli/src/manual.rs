//! Shell completions and the manual page, generated from the one definition of the flags
//! (`args.rs`), as ripgrep does: `gatehouse completions SHELL` and `gatehouse man`. Neither
//! can drift from what the command accepts.

use std::io::Write;

use clap::CommandFactory;

use crate::args::Cli;

/// The name the command is installed and completed as.
const BIN: &str = "gatehouse";

/// Write the completion script of `shell` for every command and flag.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut Cli::command(), BIN, out);
}

/// Write the manual page: the command, its options, then a section for each command
/// (`GATEHOUSE ASK`, `GATEHOUSE MCP ADD`, …) with its synopsis and options.
pub fn man(out: &mut dyn Write) -> std::io::Result<()> {
    let mut cli = Cli::command();
    cli.build();
    let page = clap_mangen::Man::new(cli.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    for sub in cli.get_subcommands() {
        command_sections(sub, BIN, out)?;
    }
    page.render_version_section(out)
}

/// One command's section, then its own commands' (depth first); `help` is left out.
fn command_sections(cmd: &clap::Command, parent: &str, out: &mut dyn Write) -> std::io::Result<()> {
    if cmd.get_name() == "help" {
        return Ok(());
    }
    let name = format!("{parent} {}", cmd.get_name());
    writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
    let page = clap_mangen::Man::new(cmd.clone().bin_name(&name));
    let mut body = Vec::new();
    page.render_description_section(&mut body)?;
    page.render_synopsis_section(&mut body)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        page.render_options_section(&mut body)?;
    }
    // Within a command's section, its parts are subsections.
    let body = String::from_utf8_lossy(&body).replace("\n.SH ", "\n.SS ");
    let body = body
        .strip_prefix(".SH ")
        .map_or(body.clone(), |b| format!(".SS {b}"));
    out.write_all(body.as_bytes())?;
    for sub in cmd.get_subcommands() {
        command_sections(sub, &name, out)?;
    }
    Ok(())
}
