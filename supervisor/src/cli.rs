//! Command line of the `strom` binary.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

pub const DEFAULT_CONFIG: &str = "/etc/strom/strom.conf";

#[derive(Debug, Parser)]
#[command(name = "strom", version, about = "strom live media streaming server")]
pub struct Cli {
    /// strom.conf to run with when no command is given.
    #[arg(long, global = false, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server: the supervisor and its workers (the default command).
    Run {
        #[arg(long, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Validate strom.conf and the files it names, then print the effective settings.
    CheckConfig {
        #[arg(long, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Print a management API URL with salt and hash, ready for curl.
    Sign {
        /// The management token (or take it from --config).
        #[arg(long)]
        token: Option<String>,
        /// Read the token and management port from this strom.conf.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Scheme, host and port to put in front of PATH.
        #[arg(long)]
        base: Option<String>,
        /// Salt to use; random when not given.
        #[arg(long)]
        salt: Option<u32>,
        /// API path, e.g. /manage/server_status (a query string may follow).
        path: String,
    },
    /// Print the OpenAPI 3.1 document of the management API (as docs/openapi.json).
    Openapi,
    /// Internal: a worker process, started by `strom run`.
    #[command(hide = true)]
    Worker { kind: strom_ipc::WorkerKind },
}
