//! Base: secrets out of a job's output and out of loaded records. [`Redactor`] is the one step
//! every line of job output passes through as it enters goldgate (the executors' log watch,
//! the BEFORE/AFTER_SCRIPT line): it masks every value of a secret-named variable in the job's
//! environment, whether the job inherited it from the caller or the case set it, so the
//! terminal, `results.json`, the reports and the PR comment never see it. [`is_secret_name`]
//! says which variables hold one (`plan` redacts the environment it prints by it too).
//! [`scrub`] is the second line of defence for text that did not come through a redactor (a
//! `results.json` written on another machine or by an older goldgate): it masks what a secret
//! looks like by itself — the value after a secret-named `NAME=` or `NAME: `, and well-known
//! token shapes. [`SecretSalt`] keys the short check of a secret's value that `run.json` keeps
//! (never the value), so that settling a run that died can tell its own value of a variable
//! from the run's.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem;

/// Whether a variable's value must not be printed: a `_`-separated word of its name is
/// `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIALS`, or it ends in `_KEY` (`HF_TOKEN`,
/// `WANDB_API_KEY`, `aws_secret_access_key`). Names that merely contain such letters
/// (`TOKENIZER_TYPE`, `NUM_TOKENS`) are not secrets: redacting them would break the argv.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> = upper.split('_').collect();
    let secret_word = |w: &&str| {
        matches!(
            *w,
            "TOKEN" | "SECRET" | "PASSWORD" | "PASSWD" | "CREDENTIAL" | "CREDENTIALS"
        )
    };
    words.iter().any(secret_word) || (words.len() > 1 && words.last() == Some(&"KEY"))
}

/// Text shown instead of a secret value.
pub const REDACTED: &str = "<redacted>";

/// Bytes a value must have to be masked: a shorter one (`1`, `no`) is no secret worth the
/// name, and masking it would blank ordinary words and numbers of the log.
pub const MIN_SECRET_LEN: usize = 4;

/// The values to mask in a job's output, longest first (a secret that contains another is
/// masked whole), each with its searcher built once: every line of a job's output is searched.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    values: Vec<memmem::Finder<'static>>,
}

impl Redactor {
    /// The values of every secret-named variable among `env` (name, value), as
    /// [`is_secret_name`] decides, that have at least [`MIN_SECRET_LEN`] bytes.
    pub fn from_env<N: AsRef<str>, V: AsRef<[u8]>>(
        env: impl IntoIterator<Item = (N, V)>,
    ) -> Redactor {
        Redactor::from_values(
            env.into_iter()
                .filter_map(|(name, value)| is_secret_name(name.as_ref()).then_some(value)),
        )
    }

    /// Every one of `values` that has at least [`MIN_SECRET_LEN`] bytes, whatever the
    /// variable that held it is called (a caller's variable a case's secret was set from).
    pub fn from_values<V: AsRef<[u8]>>(values: impl IntoIterator<Item = V>) -> Redactor {
        let mut values: Vec<Vec<u8>> = values
            .into_iter()
            .filter(|value| value.as_ref().len() >= MIN_SECRET_LEN)
            .map(|value| value.as_ref().to_vec())
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        let values = values.iter().map(|v| memmem::Finder::new(v).into_owned());
        Redactor {
            values: values.collect(),
        }
    }

    /// Whether there is nothing to mask.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `line` with every whole occurrence of a secret value replaced by `<redacted>`: not
    /// inside a longer word, path or number (the bytes around it are not letters, digits,
    /// `_`, `-`, `.` or `/`), so a short value never mangles `/tmp/x` while `token=s3cret` and
    /// `"s3cret"` are masked. Borrowed when nothing was masked.
    pub fn redact<'a>(&self, line: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Cow::Borrowed(line);
        for value in &self.values {
            if let Some(masked) = mask_value(&out, value) {
                out = Cow::Owned(masked);
            }
        }
        out
    }

    /// [`Redactor::redact`] of a line that was cut after `line`'s last byte: also masks a
    /// secret's beginning at the cut (`… hf_ab` of `hf_abcdef`), which no whole match finds.
    pub fn redact_cut<'a>(&self, line: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = self.redact(line);
        for value in &self.values {
            let value = value.needle();
            let cut = (1..value.len()).rev().find(|&n| {
                out.ends_with(&value[..n])
                    && !out
                        .len()
                        .checked_sub(n + 1)
                        .is_some_and(|j| is_word_byte(out[j]))
            });
            if let Some(n) = cut {
                let mut masked = out[..out.len() - n].to_vec();
                masked.extend_from_slice(REDACTED.as_bytes());
                out = Cow::Owned(masked);
            }
        }
        out
    }

    /// [`Redactor::redact`] of text.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }
}

/// A run's random key for [`SecretSalt::check`]: what lets whoever settles the output of a
/// run that died tell whether its own environment's value of a secret is the one the run's
/// jobs had, without the run storing the value (`run.json`'s `secret_salt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecretSalt([u8; 16]);

impl SecretSalt {
    /// A new salt from the system's random source (`/dev/urandom`).
    pub fn random() -> std::io::Result<SecretSalt> {
        use std::io::Read;
        let mut salt = [0u8; 16];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut salt)?;
        Ok(SecretSalt(salt))
    }

    /// The salt of [`SecretSalt::to_hex`]'s text; `None` for anything else.
    pub fn from_hex(hex: &str) -> Option<SecretSalt> {
        let hex = hex.as_bytes();
        if hex.len() != 32 || !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let digit = |d: u8| (d as char).to_digit(16).unwrap_or_default() as u8;
        let mut salt = [0u8; 16];
        for (byte, pair) in salt.iter_mut().zip(hex.chunks(2)) {
            *byte = digit(pair[0]) << 4 | digit(pair[1]);
        }
        Some(SecretSalt(salt))
    }

    /// 32 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The first two bytes of SHA-256 over the salt and `value`: 16 bits say too little to
    /// confirm a guess at a weak secret, yet tell another value apart 65535 times in 65536.
    pub fn check(&self, value: &[u8]) -> u16 {
        use sha2::Digest;
        let digest = sha2::Sha256::new()
            .chain_update(self.0)
            .chain_update(value)
            .finalize();
        u16::from_be_bytes([digest[0], digest[1]])
    }
}

/// Whether `b` continues a word, path or number: a secret next to one is not masked.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/')
}

/// `text` with the whole occurrences of `value` masked, or `None` when there are none.
fn mask_value(text: &[u8], value: &memmem::Finder<'_>) -> Option<Vec<u8>> {
    let word = is_word_byte;
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    for at in value.find_iter(text) {
        let end = at + value.needle().len();
        let before = at.checked_sub(1).map(|j| text[j]);
        let after = text.get(end).copied();
        if at < copied || before.is_some_and(word) || after.is_some_and(word) {
            continue;
        }
        let buf = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
        buf.extend_from_slice(&text[copied..at]);
        buf.extend_from_slice(REDACTED.as_bytes());
        copied = end;
    }
    let mut buf = out?;
    buf.extend_from_slice(&text[copied..]);
    Some(buf)
}

/// A secret-named assignment (`HF_TOKEN=…`, `"api_key": "…"`, `PASSWORD: …`: a name holding
/// one of the secret words, refined by [`is_secret_name`]) or a token with a well-known prefix
/// (Hugging Face, GitHub, Slack, AWS, OpenAI-style, GitLab).
static SECRET_SHAPES: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"(?P<name>(?i:[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|KEY)[A-Za-z0-9_]*))",
        r#"(?P<sep>"?\s*[=:]\s*["']?)(?P<value>[^\s"',;&()\[\]{}<>]+)"#,
        r"|(?P<token>\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
        r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20,}|glpat-[A-Za-z0-9_-]{20,})\b)",
    ))
    .unwrap_or_else(|e| unreachable!("the pattern is fixed: {e}"))
});

/// `text` with what looks like a secret by itself masked ([`SECRET_SHAPES`]): for text that
/// may not have passed a [`Redactor`] (a record from another machine). Borrowed when nothing
/// was masked.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    for c in SECRET_SHAPES.captures_iter(text) {
        let Some(whole) = c.get(0) else { continue };
        let masked = match (
            c.name("token"),
            c.name("name"),
            c.name("sep"),
            c.name("value"),
        ) {
            (Some(_), ..) => REDACTED.to_owned(),
            (None, Some(name), Some(sep), Some(value))
                if is_secret_name(name.as_str()) && value.as_str() != REDACTED =>
            {
                format!("{}{}{REDACTED}", name.as_str(), sep.as_str())
            }
            _ => continue,
        };
        out.push_str(&text[copied..whole.start()]);
        out.push_str(&masked);
        copied = whole.end();
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secrets_check_matches_its_value_only_and_each_salt_is_new() {
        let salt = SecretSalt::from_hex("000102030405060708090a0b0c0d0e0f").unwrap();
        assert_eq!(salt.to_hex(), "000102030405060708090a0b0c0d0e0f");
        let check = salt.check(b"hf-rotated-token-1");
        assert_eq!(check, salt.check(b"hf-rotated-token-1"));
        assert_ne!(check, salt.check(b"hf-rotated-token-2"));
        // The check is keyed: another salt checks the same value otherwise.
        let other = SecretSalt::from_hex("ff0102030405060708090a0b0c0d0e0f").unwrap();
        assert_ne!(check, other.check(b"hf-rotated-token-1"));
        let (a, b) = (SecretSalt::random().unwrap(), SecretSalt::random().unwrap());
        assert_ne!(a, b, "each run draws its own salt");
        assert_eq!(SecretSalt::from_hex(&a.to_hex()), Some(a));
        for bad in [
            "",
            "00",
            "zz0102030405060708090a0b0c0d0e0f",
            "+f0102030405060708090a0b0c0d0e0f",
            "é0102030405060708090a0b0c0d0e0",
        ] {
            assert_eq!(SecretSalt::from_hex(bad), None, "{bad}");
        }
    }

    #[test]
    fn masks_every_secret_named_value_whole_and_nothing_else() {
        let r = Redactor::from_env([
            ("HF_TOKEN", "hf_abcdefgh"),
            ("WANDB_API_KEY", "0123456789abcdef"),
            ("PATH", "/usr/bin"),
            ("TOKENIZER_TYPE", "GPT2BPETokenizer"),
            ("SHORT_SECRET", "ab"),
        ]);
        let line = b"token hf_abcdefgh key=0123456789abcdef x0123456789abcdef GPT2BPETokenizer ab";
        assert_eq!(
            String::from_utf8_lossy(&r.redact(line)),
            "token <redacted> key=<redacted> x0123456789abcdef GPT2BPETokenizer ab"
        );
        assert!(matches!(r.redact(b"nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::from_env([("PATH", "/bin")]).is_empty());
    }

    #[test]
    fn a_secret_inside_another_is_masked_once_whole() {
        let r = Redactor::from_env([("A_TOKEN", "s3cret"), ("B_TOKEN", "s3cret-v2")]);
        assert_eq!(
            r.redact_str("\"s3cret-v2\" and s3cret"),
            "\"<redacted>\" and <redacted>"
        );
    }

    #[test]
    fn scrub_masks_secret_named_assignments_and_token_shapes() {
        let text = "HF_TOKEN=abc123xyz \"wandb_api_key\": \"f00d\" TOKENIZER=gpt \
                    NUM_TOKENS: 12 push ghp_0123456789abcdefghijKLMN done";
        assert_eq!(
            scrub(text),
            "HF_TOKEN=<redacted> \"wandb_api_key\": \"<redacted>\" TOKENIZER=gpt \
             NUM_TOKENS: 12 push <redacted> done"
        );
        assert!(matches!(
            scrub("lm loss: 2.5 | iteration 3"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            scrub("(token=<redacted>) key: <redacted>"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            scrub("(token=s3cr3t) [api_key: k3y]"),
            "(token=<redacted>) [api_key: <redacted>]"
        );
    }
}
