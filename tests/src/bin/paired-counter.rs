//! The counter app hosted in this process and paired with a server: `paired-counter <url>
//! <token>`. Plays the human on stdin (`inc`, `approve`, `reject`, `quit`) and prints every
//! pairing status change and decision on stdout, one line each.

use std::time::Duration;

use agent_examples::counter::Counter;
use serde_json::json;
use tea_agent_runtime::pairing::client::{Backoff, PairingClient, PairingConfig};
use tea_agent_runtime::session::DispatchOptions;
use tea_agent_runtime::Host;
use tokio::io::{AsyncBufReadExt as _, BufReader};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(token)) = (args.next(), args.next()) else {
        eprintln!("usage: paired-counter <server-url> <token>");
        std::process::exit(2);
    };
    let host = Host::new(Counter).expect("host");
    let session = host.create_session(None).expect("session");
    let mut config = PairingConfig::new(url, token);
    config.backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(400),
        give_up: Duration::from_secs(30),
    };
    let client = PairingClient::new(&host, session.clone(), config).spawn();
    let mut status = client.status();
    tokio::spawn(async move {
        loop {
            println!("status {:?}", *status.borrow_and_update());
            if status.changed().await.is_err() {
                return;
            }
        }
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match line.trim() {
            "inc" => {
                let r = session
                    .dispatch_as_human(&json!({"type": "inc"}), DispatchOptions::default())
                    .await;
                println!("inc {}", r.is_ok());
            }
            decision @ ("approve" | "reject") => {
                let Some(p) = session.pending().into_iter().next() else {
                    println!("{decision} none");
                    continue;
                };
                let r = if decision == "approve" {
                    session.approve(&p.id, None).await
                } else {
                    session.reject(&p.id).await
                };
                println!("{decision} {} {}", p.variant, r.is_ok());
            }
            "quit" => break,
            _ => {}
        }
    }
    client.stop().await;
}
