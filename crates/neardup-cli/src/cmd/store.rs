//! `neardup store`: what is done to a service's store while no server runs on it.

use anyhow::anyhow;
use clap::{Args, Subcommand};

use crate::Failure;

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy collections from one store to another (the embedded store into PostgreSQL, and
    /// back), then read both again and compare each collection's documents and checksum.
    Copy(CopyArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "A store is a data directory of the embedded store (as `serve --data-dir` \
takes it) or a PostgreSQL URL (as `serve --store` takes it; the password from the URL, \
PGPASSWORD or ~/.pgpass, never printed). The source is read in one snapshot, so servers may go \
on serving a source database meanwhile (what they write after the snapshot is not copied); no \
server may run on the target while it is written (a server would find a collection half \
copied), nor on an embedded source. A collection the target already has is refused by name, never \
written over; one that fails part way is removed from the target again.

Example:
  neardup store copy --from ./ndata --to postgres://app@localhost/neardup")]
pub struct CopyArgs {
    /// The store to copy from: a data directory or a PostgreSQL URL.
    #[arg(long, value_name = "DIR|URL")]
    from: String,

    /// The store to copy into: a data directory (created if missing) or a PostgreSQL URL.
    #[arg(long, value_name = "DIR|URL")]
    to: String,

    /// Copy only this collection (repeat for more; default: every one).
    #[arg(long, value_name = "NAME")]
    collection: Vec<String>,
}

pub fn run(command: StoreCommand) -> Result<(), Failure> {
    match command {
        StoreCommand::Copy(args) => copy(args),
    }
}

fn copy(args: CopyArgs) -> Result<(), Failure> {
    let shown = |s: &str| neardup_server::shown_store(s);
    if args.from == args.to {
        return Err(Failure::Usage(anyhow!("--from and --to are the same store")));
    }
    let copied = neardup_server::copy::copy(&args.from, &args.to, &args.collection, &mut |line| {
        eprintln!("neardup store copy: {line}")
    })
    .map_err(|e| Failure::Runtime(anyhow!("{e}")))?;
    let documents: u64 = copied.iter().map(|c| c.documents).sum();
    let collections = copied.len();
    eprintln!(
        "neardup store copy: {collections} collection{} ({documents} document{}) copied from {} \
         to {}, read back and compared",
        if collections == 1 { "" } else { "s" },
        if documents == 1 { "" } else { "s" },
        shown(&args.from),
        shown(&args.to)
    );
    for c in copied {
        println!(
            "{}",
            serde_json::json!({"collection": c.name, "documents": c.documents,
                               "checksum": format!("{:016x}", c.checksum)})
        );
    }
    Ok(())
}
