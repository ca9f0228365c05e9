//! The consent page and the error page of the authorization endpoint, in the console's style:
//! self-contained HTML (no script, nothing loaded from elsewhere), every value escaped.

use crate::security::Scope;

/// What the consent page shows.
pub(super) struct Consent<'a> {
    pub(super) app: &'a str,
    pub(super) client_name: &'a str,
    pub(super) redirect_host: &'a str,
    /// The host publishing the client's metadata document, for a client known by one.
    pub(super) document_host: Option<&'a str>,
    /// The person's own sessions: `(id, created at as text)`, newest first.
    pub(super) sessions: &'a [(String, String)],
    pub(super) scopes: &'a [Scope],
    /// The sealed request the form posts back.
    pub(super) sealed: &'a str,
    pub(super) action: &'a str,
}

/// `text` escaped for HTML text and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
:root { --bg: #f6f7f9; --panel: #fff; --fg: #1d2330; --muted: #667085; --line: #e3e6eb;
  --accent: #2f5bd3; --accent-fg: #fff; --danger: #c0362c;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
@media (prefers-color-scheme: dark) { :root { --bg: #14171c; --panel: #1c2028; --fg: #e4e7ec;
  --muted: #98a2b3; --line: #2e3440; --accent: #6d8ff0; --accent-fg: #0d1117; --danger: #f0776d; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
header { padding: 10px 18px; background: var(--panel); border-bottom: 1px solid var(--line); }
header h1 { font-size: 16px; margin: 0; font-weight: 600; }
main { max-width: 560px; margin: 24px auto; padding: 0 14px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 14px; margin-bottom: 14px; }
section > h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em;
  color: var(--muted); margin: 0 0 10px; }
label { display: block; margin: 6px 0; }
code { font-family: var(--mono); }
.muted { color: var(--muted); }
.buttons { display: flex; gap: 10px; }
button { font: inherit; padding: 7px 16px; border-radius: 6px; border: 1px solid var(--line);
  background: var(--panel); color: var(--fg); cursor: pointer; }
button.primary { background: var(--accent); color: var(--accent-fg); border-color: var(--accent); }
";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta \
         name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta \
         name=\"referrer\" content=\"same-origin\">\n<title>{}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n<header><h1>{}</h1></header>\n<main>\n{body}\n</main>\n</body>\n</html>\n",
        escape(title),
        escape(title)
    )
}

/// The consent page: who asks, where the answer goes, which session, which scopes; Approve
/// or Deny. A new session is preselected, so one click on Approve grants it.
pub(super) fn consent_page(c: &Consent<'_>) -> String {
    let mut sessions = String::from(
        "<label><input type=\"radio\" name=\"session\" value=\"new\" checked> A new session</label>\n",
    );
    for (id, created) in c.sessions {
        sessions.push_str(&format!(
            "<label><input type=\"radio\" name=\"session\" value=\"{}\"> Session <code>{}</code> \
             <span class=\"muted\">started {}</span></label>\n",
            escape(id),
            escape(id),
            escape(created)
        ));
    }
    let mut scopes = String::new();
    for scope in c.scopes {
        match scope {
            Scope::Read => scopes.push_str(&format!(
                "<label><input type=\"checkbox\" checked disabled> {}</label>\n",
                escape(scope.meaning())
            )),
            Scope::Act => scopes.push_str(&format!(
                "<label><input type=\"checkbox\" name=\"act\" value=\"1\" checked> {}</label>\n",
                escape(scope.meaning())
            )),
        }
    }
    // A document's name is the client's own claim: the host that publishes it is shown too.
    let published = c
        .document_host
        .map(|h| format!(" It is described by <code>{}</code>.", escape(h)))
        .unwrap_or_default();
    let body = format!(
        "<form method=\"post\" action=\"{action}\">\n\
         <section><h2>Connect an agent</h2>\n<p><strong>{client}</strong> asks to use \
         <strong>{app}</strong> on your behalf. Its answer goes to <code>{host}</code>.\
         {published}</p>\n\
         <p class=\"muted\">It acts as an agent: it can never approve a confirmation or send what \
         only you may send.</p></section>\n\
         <section><h2>Session</h2>\n{sessions}</section>\n\
         <section><h2>It may</h2>\n{scopes}</section>\n\
         <input type=\"hidden\" name=\"request\" value=\"{sealed}\">\n\
         <div class=\"buttons\"><button class=\"primary\" type=\"submit\" name=\"decision\" \
         value=\"approve\">Approve</button> <button type=\"submit\" name=\"decision\" \
         value=\"deny\">Deny</button></div>\n</form>",
        action = escape(c.action),
        client = escape(c.client_name),
        app = escape(c.app),
        host = escape(c.redirect_host),
        sealed = escape(c.sealed),
    );
    page("Connect an agent", &body)
}

/// A page saying why the request cannot go on (nothing is sent back to the client: its
/// redirect URI is unknown or not trusted).
pub(super) fn error_page(detail: &str) -> String {
    let body = format!(
        "<section><h2>This request cannot go on</h2>\n<p>{}</p></section>",
        escape(detail)
    );
    page("Connect an agent", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_escaped_and_a_new_session_is_preselected() {
        let html = consent_page(&Consent {
            app: "todo",
            client_name: "<script>alert(1)</script>",
            redirect_host: "evil\"host",
            document_host: Some("docs<.example"),
            sessions: &[("s-1".into(), "today".into())],
            scopes: &[Scope::Read, Scope::Act],
            sealed: "v1.abc.def",
            action: "/agent/oauth/authorize",
        });
        assert!(!html.contains("<script>alert"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("evil&quot;host"));
        assert!(html.contains("described by <code>docs&lt;.example</code>"));
        assert!(html.contains("value=\"new\" checked"));
        assert!(html.contains("value=\"s-1\""));
        assert!(html.contains("name=\"act\""));
        assert!(!html.contains("<script"));
    }
}
