//! Stage "report": what the site's pages run and how data reaches it safely. Names, run ids
//! and paths come from records a job can write, so nothing of them may run: text and
//! attributes are HTML-escaped ([`esc`]), the JSON inside a
//! `<script>` element escapes every character that could end the element or open a comment
//! (`<`, `>`, `&`) and the two line separators old parsers end a string at, and a link is only
//! ever `http(s)://…` or a relative path (a run id `javascript:alert(4)` stays text).

/// `&`, `<`, `>`, `"` and `'` escaped for HTML text and attributes.
pub(crate) fn esc(text: &str) -> String {
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

/// `value` as JSON that is inert inside `<script type="application/json">`: `<`, `>`, `&`,
/// U+2028 and U+2029 written as `\uXXXX` escapes (they can only occur inside strings, where an
/// escape means the same character), so no `</script>` or `<!--` is ever in the page's text.
pub(crate) fn json_in_script(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Whether `url` may be an `href`: `http://` or `https://`, or a relative reference (no
/// scheme before its first `/`, `?` or `#`), with no whitespace or control character anywhere
/// (browsers drop those before they read a scheme).
pub fn safe_href(url: &str) -> bool {
    if url.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return true;
    }
    let head = url.split(['/', '?', '#']).next().unwrap_or("");
    !head.contains(':') && !url.starts_with("//") && !url.contains('\\')
}

/// `text` percent-encoded for a URL: every byte but unreserved ones (and `/` when `keep_slash`).
pub(crate) fn percent_encode(text: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:960px;color:#222;padding:0 12px}\
h1{font-size:22px;overflow-wrap:anywhere}h2{font-size:16px;margin-top:28px;color:#555}\
table.index{border-collapse:collapse;width:100%}table.index td,table.index th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;overflow-wrap:anywhere}\
.controls{display:flex;gap:16px;align-items:center;flex-wrap:wrap;margin:12px 0}.controls input[type=search]{min-width:260px;padding:4px 6px}\
.changed{background:#fff6e8;border-left:4px solid #e08a00;padding:6px 10px}.changed a{color:#2458a6}\
.legend{color:#666;font-size:12px}.legend .sw{display:inline-block;width:18px;height:0;vertical-align:middle;margin:0 4px 0 10px}\
figure.plot{margin:12px 0 22px}figcaption{font-weight:600;overflow-wrap:anywhere}.sub{font-weight:400;color:#777;margin-left:8px}\
figcaption .flag{font-weight:600;color:#b56a00;margin-left:8px}\
svg{width:100%;height:auto;background:#fafafa;border:1px solid #eee}\
.area{fill:#fff}.grid{stroke:#eee}.axis{stroke:#999}.tick{font-size:11px;fill:#555;text-anchor:end}\
.xtick{font-size:10px;fill:#666;text-anchor:middle}.xcommit{font-size:10px;fill:#999;text-anchor:middle;font-family:ui-monospace,monospace}\
circle.job{fill:#4a7fc1;fill-opacity:.55}polyline.median{fill:none;stroke:#c14a4a;stroke-width:2}\
line.change{stroke:#e08a00;stroke-width:3}text.change{font-size:11px;fill:#b56a00;font-weight:600}\
line.note{stroke:#2a9d5c;stroke-width:2;stroke-dasharray:4 3}text.note{font-size:11px;fill:#2a9d5c}\
rect.hit{fill:transparent;cursor:pointer}rect.hit:hover{fill:#0001}\
#tip{position:absolute;background:#fff;border:1px solid #bbb;box-shadow:0 2px 6px #0002;padding:6px 10px;font-size:12px;max-width:440px;overflow-wrap:anywhere}\
.hits{font-size:12px;color:#555;margin-top:2px}.hits a{color:#2458a6}\
#tip a{color:#2458a6}#tip code{font-size:11px;color:#555}footer{margin-top:32px;color:#999;font-size:12px}";

/// Hover shows a run, a click pins it (so its links can be followed); the filter box and
/// `changed only` hide plots on a case page and cases on the index (where a metric that
/// matches links its case's page filtered to it; `#filter=TEXT` fills the box); the body
/// records how many plots have data (`data-plots-with-data`) for the browser test.
pub(crate) const SCRIPT: &str = r#"
(function () {
  var tip = document.getElementById('tip');
  var pinned = false;
  var withData = 0;
  function add(parent, tag, text) {
    var e = document.createElement(tag);
    if (text !== undefined) { e.textContent = text; }
    parent.appendChild(e);
    return e;
  }
  // The page only ever writes http(s) or relative links; this is the second lock.
  function safe(h) {
    return typeof h === 'string' && (/^https?:\/\//i.test(h) || !/^[^\/?#]*:/.test(h));
  }
  function show(run, event, pin) {
    if (pinned && !pin) { return; }
    pinned = pin;
    tip.textContent = '';
    add(tip, 'b', run.commit.slice(0, 12) + ' (' + run.branch + ')');
    add(tip, 'div', run.run + ', ' + run.started);
    add(tip, 'div', 'median ' + run.median);
    var list = add(tip, 'ul');
    run.jobs.forEach(function (job) {
      var li = add(list, 'li');
      var label = job[0] + ': ' + job[1];
      if (job[2] && safe(job[2])) {
        add(li, 'a', label).href = job[2];
      } else {
        add(li, 'span', label + ' ');
        add(li, 'code', job[3]);
      }
    });
    var left = Math.min(event.pageX + 12, window.scrollX + window.innerWidth - 460);
    tip.style.left = Math.max(left, 0) + 'px';
    tip.style.top = (event.pageY + 12) + 'px';
    tip.hidden = false;
  }
  var figs = document.querySelectorAll('figure.plot');
  figs.forEach(function (fig) {
    var data = JSON.parse(fig.querySelector('script.data').textContent);
    if (data.length > 0 && fig.querySelectorAll('circle.job').length > 0) { withData += 1; }
    fig.querySelectorAll('rect.hit').forEach(function (rect) {
      var run = data[Number(rect.getAttribute('data-i'))];
      rect.addEventListener('mouseenter', function (e) { show(run, e, false); });
      rect.addEventListener('click', function (e) { show(run, e, true); e.stopPropagation(); });
    });
    fig.addEventListener('mouseleave', function () { if (!pinned) { tip.hidden = true; } });
  });
  document.addEventListener('click', function (e) {
    if (!tip.contains(e.target)) { pinned = false; tip.hidden = true; }
  });
  var filter = document.getElementById('filter');
  var changedOnly = document.getElementById('changed-only');
  var count = document.getElementById('shown');
  var index = document.getElementById('cases');
  var cases = index ? JSON.parse(index.textContent) : [];
  var rows = document.querySelectorAll('tr.case');
  function has(name, text) { return name.toLowerCase().indexOf(text) >= 0; }
  // The index: a case shows when its name or one of its metrics (one with a change point,
  // under `changed only`) matches; the matching metrics link its page, filtered to each.
  function applyIndex(text, only) {
    var shown = 0;
    rows.forEach(function (row, i) {
      var c = cases[i] || { 'case': '', metrics: [], changed: [] };
      var hits = text === '' ? [] :
        (only ? c.changed : c.metrics).filter(function (m) { return has(m, text); });
      var visible = hits.length > 0 || (has(c['case'], text) && (!only || c.changed.length > 0));
      row.hidden = !visible;
      if (visible) { shown += 1; }
      var box = row.querySelector('div.hits');
      var page = row.querySelector('a').getAttribute('href');
      box.textContent = '';
      box.hidden = hits.length === 0;
      hits.slice(0, 12).forEach(function (m, k) {
        if (k > 0) { box.appendChild(document.createTextNode(' · ')); }
        var link = add(box, 'a', m);
        if (safe(page)) { link.href = page + '#filter=' + encodeURIComponent(m); }
      });
      if (hits.length > 12) { add(box, 'span', ' · ' + (hits.length - 12) + ' more'); }
    });
    if (count) { count.textContent = shown + ' of ' + rows.length + ' cases'; }
  }
  // A case page: a plot shows when its metric matches (and changed, under `changed only`).
  function applyCase(text, only) {
    var shown = 0;
    figs.forEach(function (fig) {
      var metric = fig.getAttribute('data-metric') || '';
      var visible = has(metric, text) && (!only || fig.getAttribute('data-changed') === '1');
      fig.hidden = !visible;
      if (visible) { shown += 1; }
    });
    document.querySelectorAll('section.group').forEach(function (g) {
      g.hidden = g.querySelectorAll('figure.plot:not([hidden])').length === 0;
    });
    if (count) { count.textContent = shown + ' of ' + figs.length + ' plots'; }
  }
  function apply() {
    var text = filter ? filter.value.trim().toLowerCase() : '';
    var only = changedOnly ? changedOnly.checked : false;
    if (index) { applyIndex(text, only); } else { applyCase(text, only); }
  }
  // `#filter=TEXT` (the index's metric links, or a link someone shares) fills the filter.
  var wanted = /^#filter=(.*)$/.exec(location.hash);
  if (wanted && filter) {
    try { filter.value = decodeURIComponent(wanted[1]); } catch (e) { filter.value = ''; }
  }
  if (filter) { filter.addEventListener('input', apply); }
  if (changedOnly) { changedOnly.addEventListener('change', apply); }
  apply();
  document.body.setAttribute('data-plots-with-data', String(withData));
  // `#show=K`: pin the tooltip of plot K's newest run (a link can point at it; the browser
  // test and the screenshot use it).
  var m = /^#show=(\d+)$/.exec(location.hash);
  if (m && figs[Number(m[1])]) {
    var hits = figs[Number(m[1])].querySelectorAll('rect.hit');
    var last = hits[hits.length - 1];
    if (last) {
      var box = last.getBoundingClientRect();
      last.dispatchEvent(new MouseEvent('click', {
        bubbles: true, clientX: box.left, clientY: box.top + box.height / 2
      }));
    }
  }
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_a_script_never_ends_it_nor_opens_a_comment() {
        let v = serde_json::json!({"name": "a</script><!--b\u{2028}c&d>"});
        let text = json_in_script(&v);
        assert!(
            !text.contains('<') && !text.contains('>') && !text.contains('&'),
            "{text}"
        );
        assert!(!text.contains('\u{2028}'), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v, "the escapes mean the same characters");
    }

    #[test]
    fn only_http_and_relative_links_are_safe() {
        for ok in [
            "https://ci.example/runs/1",
            "HTTP://x",
            "runs/2026/results.json",
            "./javascript%3Aalert(4)/x",
            "../a?b=c:d",
            "#frag",
        ] {
            assert!(safe_href(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(4)",
            "JavaScript:alert(4)/x/results.json",
            " javascript:alert(1)",
            "java\tscript:alert(1)",
            "data:text/html,<script>",
            "vbscript:x",
            "file:///etc/passwd",
            "//evil.example/x",
            "\\\\evil\\x",
            "",
        ] {
            assert!(!safe_href(bad), "{bad:?}");
        }
        assert_eq!(
            percent_encode("javascript:alert(4)", false),
            "javascript%3Aalert%284%29"
        );
    }
}
