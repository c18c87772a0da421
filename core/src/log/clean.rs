//! Stage "observe", log parser: [`LineCleaner`] turns a line as read into the lines a terminal
//! would show: progress output that rewrites its line with a lone `\r` (a tqdm bar, a
//! `print(..., end="\r")`) becomes one line per rewrite, and ANSI escape sequences (colours,
//! cursor moves) are dropped, so `\x1b[32m iteration 5/ 10 |...\x1b[0m` parses like the plain
//! line. Lines without `\r` or ESC, nearly all of them, pass through untouched.

/// Splits and cleans lines; keeps one buffer for lines that carry escape sequences.
#[derive(Debug, Default)]
pub struct LineCleaner {
    buf: Vec<u8>,
}

impl LineCleaner {
    /// Calls `f` with each line `raw` (one line without its `\n`) holds: the parts between
    /// lone `\r`s (a `\r` before the end is a Windows line ending, not a rewrite; empty parts
    /// are skipped), each without its escape sequences.
    pub fn split(&mut self, raw: &[u8], f: &mut dyn FnMut(&[u8])) {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if memchr::memchr2(b'\r', 0x1b, raw).is_none() {
            f(raw);
            return;
        }
        for part in raw.split(|b| *b == b'\r').filter(|p| !p.is_empty()) {
            if memchr::memchr(0x1b, part).is_none() {
                f(part);
                continue;
            }
            let mut buf = std::mem::take(&mut self.buf);
            strip_ansi(part, &mut buf);
            f(&buf);
            self.buf = buf;
        }
    }
}

/// `s` without ANSI escape sequences, into `out`: CSI (`ESC [` parameters, final byte
/// `@`..`~`), OSC (`ESC ]` up to BEL or `ESC \`), `ESC` + intermediates + final byte
/// (`ESC ( B`) and two-byte escapes. An unfinished sequence
/// at the end is dropped.
pub fn strip_ansi(s: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < s.len() {
        if s[i] != 0x1b {
            out.push(s[i]);
            i += 1;
            continue;
        }
        i = match s.get(i + 1) {
            Some(b'[') => {
                let end = s[i + 2..].iter().position(|b| (0x40..=0x7e).contains(b));
                end.map_or(s.len(), |e| i + 2 + e + 1)
            }
            Some(b']') => osc_end(s, i + 2),
            // `ESC ( B` and the like: intermediate bytes, then one final byte.
            Some(0x20..=0x2f) => {
                let end = s[i + 1..].iter().position(|b| !(0x20..=0x2f).contains(b));
                end.map_or(s.len(), |e| (i + 1 + e + 1).min(s.len()))
            }
            Some(_) => i + 2,
            None => s.len(),
        };
    }
}

/// `text` as one printable line for a terminal or a CI log: ANSI escape sequences dropped,
/// every other control character (`\n`, `\r`, a lone ESC, BEL ...) written as its escape
/// (`\n`), so a case name or a log line can neither move the cursor nor start a line of its
/// own, where `::warning::` would be a GitHub Actions workflow command.
pub fn one_line(text: &str) -> String {
    let mut stripped = Vec::new();
    let text: std::borrow::Cow<'_, str> = if text.contains('\u{1b}') {
        strip_ansi(text.as_bytes(), &mut stripped);
        String::from_utf8_lossy(&stripped)
    } else {
        text.into()
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The index after an OSC sequence whose body starts at `from`: after its BEL or `ESC \`.
fn osc_end(s: &[u8], from: usize) -> usize {
    let mut j = from;
    while j < s.len() {
        match s[j] {
            0x07 => return j + 1,
            0x1b if s.get(j + 1) == Some(&b'\\') => return j + 2,
            _ => j += 1,
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(raw: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        LineCleaner::default().split(raw, &mut |p| {
            out.push(String::from_utf8_lossy(p).into_owned());
        });
        out
    }

    #[test]
    fn lone_carriage_returns_split_and_a_line_ending_one_does_not() {
        assert_eq!(parts(b"plain line\r"), ["plain line"]);
        assert_eq!(
            parts(b"step 1\rstep 2\r\rstep 3"),
            ["step 1", "step 2", "step 3"]
        );
        assert_eq!(parts(b"\r"), [""], "an empty line stays one empty line");
    }

    #[test]
    fn one_line_cannot_start_a_workflow_command_or_move_the_cursor() {
        assert_eq!(
            one_line("gpt/x\n::warning::pwned\r::error::y"),
            "gpt/x\\n::warning::pwned\\r::error::y"
        );
        assert_eq!(one_line("\x1b[2J\x1b]0;t\x07name\x1b"), "name");
        assert_eq!(one_line("a\x07b"), "a\\u{7}b");
        assert_eq!(one_line("plain"), "plain");
    }

    #[test]
    fn escape_sequences_are_dropped() {
        assert_eq!(
            parts(b"\x1b[32m iteration 5\x1b[0m | \x1b[1;31mloss\x1b[m"),
            [" iteration 5 | loss"]
        );
        assert_eq!(parts(b"a\x1b]0;title\x07b\x1b]8;;x\x1b\\c"), ["abc"]);
        assert_eq!(parts(b"\x1b(Bx\x1b[2K\rdone\x1b["), ["x", "done"]);
    }
}
