//! The `strom` binary: supervisor (`strom run`), workers (`strom worker <kind>`),
//! `strom check-config` and `strom sign`.

mod api;
mod api_latency;
mod auth;
mod cli;
mod cluster;
mod commands;
mod config;
mod console;
mod drain;
mod link_signature;
mod listeners;
mod logging;
mod management;
mod metrics;
mod process;
mod registry_audit;
mod reload;
mod run;
mod state;
mod system;
mod worker;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => run::main(&cli.config),
        Some(Command::Run { config }) => run::main(&config),
        Some(Command::Worker { kind }) => worker::main(kind),
        Some(Command::CheckConfig { config }) => run::check_config(&config),
        Some(Command::Sign {
            token,
            config,
            base,
            salt,
            path,
        }) => run::sign(token, config, base, salt, &path),
        Some(Command::Openapi) => {
            print!("{}", api::openapi_document());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strom: {e:#}");
            ExitCode::FAILURE
        }
    }
}
