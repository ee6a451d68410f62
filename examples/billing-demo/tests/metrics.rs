//! The demo's `/metrics` against its documentation: the demo runs with `--metrics-addr`, its
//! exposition is scraped over HTTP while it runs and parsed with a Prometheus text-format parser,
//! and every series the docs list (the table in `docs/metrics.md`, written once) must be there
//! with its kind, labels and label values, and nothing undocumented besides.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use billing_demo::jobs;
use prometheus_parse::{Scrape, Value};

const METRICS_DOCS: &str = include_str!("../../../docs/metrics.md");

/// A documented metric: its kind, and each label with the values the docs allow (empty: any).
#[derive(Debug, Clone, PartialEq)]
struct Documented {
    kind: String,
    /// The roles the series is promised for: a meaning that starts "for a calendar role" or "for
    /// an interval role" limits it to those.
    roles: &'static [&'static str],
    labels: BTreeMap<String, BTreeSet<String>>,
}

/// The backticked words of `text`, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The cells of a Markdown table row.
fn cells(row: &str) -> Vec<&str> {
    row.trim()
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect()
}

/// The table of `docs/metrics.md`: `| name | kind | labels (values) | meaning |`.
fn docs_table() -> BTreeMap<String, Documented> {
    METRICS_DOCS
        .lines()
        .filter_map(|line| line.strip_prefix("| `leader_"))
        .map(|row| {
            let cells = cells(row);
            let name = format!("leader_{}", cells[0].trim_end_matches('`'));
            let mut labels = BTreeMap::new();
            // `role`, `reason` (`a`, `b`): a label's allowed values follow it in parentheses.
            let mut rest = cells[2];
            while let Some(start) = rest.find('`') {
                let after = &rest[start + 1..];
                let end = after.find('`').expect("closing backtick");
                let label = after[..end].to_owned();
                rest = &after[end + 1..];
                let mut values = BTreeSet::new();
                if let Some(inner) = rest.trim_start().strip_prefix('(') {
                    let close = inner.find(')').expect("closing parenthesis");
                    values = backticked(&inner[..close]).into_iter().collect();
                    rest = &inner[close + 1..];
                }
                labels.insert(label, values);
            }
            let roles: &'static [&'static str] = if cells[3].starts_with("for a calendar role") {
                &CALENDAR_ROLES
            } else if cells[3].starts_with("for an interval role") {
                &INTERVAL_ROLES
            } else {
                &ROLES
            };
            let doc = Documented {
                kind: cells[1].to_owned(),
                roles,
                labels,
            };
            (name, doc)
        })
        .collect()
}

/// Everything that contradicts the docs (`wrong`), and what the docs promise that is not there
/// yet (`missing`).
#[derive(Debug, Default)]
struct Findings {
    wrong: Vec<String>,
    missing: Vec<String>,
}

const ROLES: [&str; 5] = [
    jobs::BILLING.as_str(),
    jobs::DUNNING.as_str(),
    jobs::WEBHOOK_OUTBOX.as_str(),
    jobs::EMAIL_OUTBOX.as_str(),
    jobs::WEBHOOK_DELIVERY.as_str(),
];
/// The demo's role on a cron schedule.
const CALENDAR_ROLES: [&str; 1] = [jobs::BILLING.as_str()];
const INTERVAL_ROLES: [&str; 4] = [
    jobs::DUNNING.as_str(),
    jobs::WEBHOOK_OUTBOX.as_str(),
    jobs::EMAIL_OUTBOX.as_str(),
    jobs::WEBHOOK_DELIVERY.as_str(),
];

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Counter(_) => "counter",
        Value::Gauge(_) => "gauge",
        Value::Histogram(_) => "histogram",
        Value::Summary(_) => "summary",
        Value::Untyped(_) => "untyped",
    }
}

fn compare(scrape: &Scrape, docs: &BTreeMap<String, Documented>) -> Findings {
    let mut found = Findings::default();
    for sample in &scrape.samples {
        let base = sample
            .metric
            .strip_suffix("_sum")
            .or_else(|| sample.metric.strip_suffix("_count"))
            .filter(|base| docs.get(*base).is_some_and(|d| d.kind == "histogram"))
            .unwrap_or(&sample.metric);
        if !base.starts_with("leader_") {
            continue;
        }
        let Some(doc) = docs.get(base) else {
            found
                .wrong
                .push(format!("{} is exported but not documented", sample.metric));
            continue;
        };
        if base == sample.metric && kind_of(&sample.value) != doc.kind {
            found.wrong.push(format!(
                "{base} is a {}, documented as a {}",
                kind_of(&sample.value),
                doc.kind
            ));
        }
        let labels: BTreeSet<&String> = sample.labels.keys().collect();
        if labels != doc.labels.keys().collect() {
            found.wrong.push(format!(
                "{base} has labels {labels:?}, documented {:?}",
                doc.labels.keys()
            ));
        }
        for (label, allowed) in &doc.labels {
            match sample.labels.get(label) {
                Some(value) if !allowed.is_empty() && !allowed.contains(value) => found.wrong.push(
                    format!("{base}{{{label}={value:?}}} is not a documented value"),
                ),
                _ => {}
            }
        }
    }
    for (name, doc) in docs {
        if !scrape.docs.contains_key(name) {
            found.missing.push(format!("# HELP {name}"));
        }
        let series: Vec<_> = scrape
            .samples
            .iter()
            .filter(|s| &s.metric == name)
            .collect();
        if doc.labels.contains_key("role") {
            for &role in doc.roles {
                if !series.iter().any(|s| s.labels.get("role") == Some(role)) {
                    found.missing.push(format!("{name}{{role={role:?}}}"));
                }
            }
        } else if series.is_empty() {
            found.missing.push(name.clone());
        }
    }
    for role in ROLES {
        for reason in ["never_ran", "read_failed"] {
            let has = |s: &&prometheus_parse::Sample| {
                s.metric == "leader_last_tick_unknown"
                    && s.labels.get("role") == Some(role)
                    && s.labels.get("reason") == Some(reason)
            };
            if !scrape.samples.iter().any(|s| has(&s)) {
                found.missing.push(format!(
                    "leader_last_tick_unknown{{role={role:?},reason={reason:?}}}"
                ));
            }
        }
        let panicked = scrape.samples.iter().find(|s| {
            s.metric == "leader_lease_lost_total"
                && s.labels.get("role") == Some(role)
                && s.labels.get("reason") == Some("panicked")
        });
        match panicked.map(|s| &s.value) {
            None => found.missing.push(format!(
                "leader_lease_lost_total{{role={role:?},reason=\"panicked\"}}"
            )),
            Some(Value::Counter(n)) if *n == 0.0 => {}
            Some(other) => found.wrong.push(format!(
                "leader_lease_lost_total{{role={role:?},reason=\"panicked\"}} is {other:?} before any panic, not 0"
            )),
        }
    }
    found
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_demos_metrics_endpoint_serves_every_documented_series() {
    let docs = docs_table();
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap();
    let mut demo = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_billing-demo"))
            .args(["--metrics-addr", &addr.to_string()])
            .args([
                "--replicas",
                "2",
                "--seconds",
                "10",
                "--no-kill",
                "--take-over",
            ])
            .args(["--subscriptions", "20", "--outbox-rows", "50"])
            .stdout(Stdio::null())
            .spawn()
            .expect("the demo starts"),
    );
    let mut last = Err("not scraped yet".to_owned());
    loop {
        if let Some(status) = demo.0.try_wait().unwrap() {
            panic!(
                "the demo ended ({status}) before /metrics served every documented series; last scrape: {last:#?}"
            );
        }
        last = leader_testkit::get_metrics(addr)
            .and_then(|body| {
                let lines = body.lines().map(|line| Ok(line.to_owned()));
                Scrape::parse(lines).map_err(|e| e.to_string())
            })
            .map(|parsed| compare(&parsed, &docs));
        if let Ok(findings) = &last {
            assert!(findings.wrong.is_empty(), "{:#?}", findings.wrong);
            if findings.missing.is_empty() {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

const ALERTS: &str = include_str!("../../../docs/alerts.yaml");
const RUNBOOK: &str = include_str!("../../../docs/runbook.md");

/// The alerts of `docs/alerts.yaml`, each with its expression.
fn alerts() -> Vec<(String, String)> {
    let mut alerts: Vec<(String, String)> = Vec::new();
    let mut in_expr = false;
    for line in ALERTS.lines() {
        let trimmed = line.trim();
        let key = trimmed
            .split_once(':')
            .filter(|(key, _)| key.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .map(|(key, rest)| (key.trim_start_matches("- "), rest.trim()));
        if let Some(name) = trimmed.strip_prefix("- alert:") {
            alerts.push((name.trim().to_owned(), String::new()));
            in_expr = false;
        } else if let Some(("expr", rest)) = key {
            in_expr = true;
            alerts.last_mut().expect("an alert").1.push_str(rest);
        } else if key.is_some() || trimmed.starts_with('#') {
            in_expr = false;
        } else if in_expr {
            alerts.last_mut().expect("an alert").1.push_str(trimmed);
        }
    }
    alerts
}

/// The `leader_*` identifiers in `text`.
fn leader_metrics(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("leader_"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_metric_an_alert_uses_is_a_documented_metric() {
    let docs = docs_table();
    let alerts = alerts();
    assert!(alerts.len() >= 4, "{alerts:?}");
    for (alert, expr) in &alerts {
        let used = leader_metrics(expr);
        assert!(!used.is_empty(), "{alert} uses no leader_ metric: {expr:?}");
        for metric in used {
            assert!(
                docs.contains_key(&metric),
                "{alert} uses {metric}, which docs/metrics.md does not document"
            );
        }
    }
}

#[test]
fn every_alert_is_explained_in_the_runbook_and_links_to_it() {
    let headings: BTreeSet<String> = RUNBOOK
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .filter(|heading| heading.starts_with("Leader"))
        .map(str::to_owned)
        .collect();
    let names: BTreeSet<String> = alerts().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names, headings,
        "alerts.yaml's alerts and the runbook's sections"
    );
    for name in &names {
        let link = format!("runbook: \"docs/runbook.md#{}\"", name.to_lowercase());
        assert!(ALERTS.contains(&link), "{name} has no {link}");
    }
}

const GRAFANA: &str = include_str!("../../../docs/grafana-dashboard.json");

/// Every PromQL query of the Grafana dashboard: its panels' (rows' panels included) and its
/// variables', each with where it is.
fn grafana_queries() -> Vec<(String, String)> {
    let dashboard: serde_json::Value = serde_json::from_str(GRAFANA).expect("valid JSON");
    let mut queries = Vec::new();
    let mut panels: Vec<&serde_json::Value> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .collect();
    while let Some(panel) = panels.pop() {
        panels.extend(panel["panels"].as_array().into_iter().flatten());
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"]
                .as_str()
                .expect("each target has a PromQL expr");
            queries.push((format!("panel {:?}", panel["title"]), expr.to_owned()));
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(query) = variable["query"]["query"].as_str() {
            queries.push((format!("variable {:?}", variable["name"]), query.to_owned()));
        }
    }
    queries
}

/// The metric a series name belongs to: a histogram's `_bucket`, `_count` and `_sum` series are
/// its own.
fn metric_of(series: &str, docs: &BTreeMap<String, Documented>) -> Option<String> {
    if docs.contains_key(series) {
        return Some(series.to_owned());
    }
    ["_bucket", "_count", "_sum"].iter().find_map(|suffix| {
        let base = series.strip_suffix(suffix)?;
        docs.get(base)
            .filter(|doc| doc.kind == "histogram")
            .map(|_| base.to_owned())
    })
}

/// The labels a PromQL query names: in `by (...)` and in `{label="..."}` selectors.
fn query_labels(expr: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("by (") {
        let inner = &rest[at + 4..];
        let close = inner.find(')').expect("closing parenthesis");
        labels.extend(inner[..close].split(',').map(|l| l.trim().to_owned()));
        rest = &inner[close..];
    }
    let mut rest = expr;
    while let Some(open) = rest.find('{') {
        let inner = &rest[open + 1..];
        let close = inner.find('}').expect("closing brace");
        for matcher in inner[..close].split(',') {
            let name: String = matcher
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                labels.insert(name);
            }
        }
        rest = &inner[close..];
    }
    labels.remove("");
    labels
}

#[test]
fn every_grafana_panel_queries_only_documented_metrics_and_labels_and_shows_them_all() {
    let docs = docs_table();
    let queries = grafana_queries();
    assert!(queries.len() >= 12, "{queries:?}");
    let mut shown = BTreeSet::new();
    for (place, expr) in &queries {
        // Each label the query selects or groups by is one of its metrics' (`le`: a histogram's).
        let mut allowed: BTreeSet<String> = BTreeSet::from(["le".to_owned()]);
        for series in leader_metrics(expr) {
            if let Some(metric) = metric_of(&series, &docs) {
                allowed.extend(docs[&metric].labels.keys().cloned());
            }
        }
        for label in query_labels(expr) {
            assert!(
                allowed.contains(&label),
                "{place} uses the label {label}, which none of its metrics has: {expr}"
            );
        }
        let used = leader_metrics(expr);
        assert!(
            !used.is_empty(),
            "{place} queries no leader_ metric: {expr}"
        );
        for series in used {
            let metric = metric_of(&series, &docs).unwrap_or_else(|| {
                panic!("{place} queries {series}, which docs/metrics.md does not document")
            });
            shown.insert(metric);
        }
    }
    let undocumented_in_grafana: Vec<&String> =
        docs.keys().filter(|m| !shown.contains(*m)).collect();
    assert!(
        undocumented_in_grafana.is_empty(),
        "docs/metrics.md lists metrics no Grafana panel shows: {undocumented_in_grafana:?}"
    );
}
