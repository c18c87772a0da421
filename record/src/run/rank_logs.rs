//! Stage "run": the per-rank logs a launcher writes under a job's `logs/` folder (torchrun's
//! `--log-dir`: `<run>/attempt_<n>/<rank>/stdout.log` and `stderr.log`), masked once the run
//! is over as the console log is masked while it streams (CI uploads the whole folder), by
//! the local and the Slurm executor, and after a run that died by whoever settles it. A file
//! with nothing to mask is left as it is; a masked one is replaced atomically, and with
//! `--keep-raw-log` its raw text stays beside it as `<name>.raw.log`.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use goldgate_core::redact::Redactor;

/// Longest piece masked at once: a longer line is masked piece by piece (a secret cut at a
/// piece's end is masked from its beginning to the cut), so a job that never prints a newline
/// cannot fill memory.
const PIECE: u64 = 1 << 20;

/// Masks every regular file under `logs` but the console log (`console`) and raw copies
/// (`*.raw.log`); links are never followed. Returns a warning per file it could not mask.
pub(crate) fn mask(
    logs: &Path,
    console: &Path,
    redactor: &Redactor,
    keep_raw: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if redactor.is_empty() {
        return warnings;
    }
    let mut files = Vec::new();
    collect(logs, &mut files);
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path == console || name.ends_with(".raw.log") {
            continue;
        }
        if let Err(e) = mask_file(&path, redactor, keep_raw) {
            warnings.push(format!(
                "cannot mask the secrets in {}: {e}",
                path.display()
            ));
        }
    }
    warnings
}

/// Replaces the text of every regular file in the folders under `logs` — the launcher's
/// per-rank logs; goldgate's own logs beside them are left alone — with the line `note`: for
/// output that cannot be masked, because a secret it must be masked for is not known here.
/// With `keep_raw` the text stays beside it as `<name>.raw.log`, unless a raw copy is there
/// already (an earlier settle kept it: the file holds goldgate's text since, never overwritten
/// onto the raw one). A file that holds `note` already is left alone. Returns how many files
/// it replaced, and a warning per file it could not replace.
pub(crate) fn withhold(logs: &Path, note: &str, keep_raw: bool) -> (usize, Vec<String>) {
    let mut files = Vec::new();
    collect(logs, &mut files);
    let text = format!("{note}\n");
    let (mut withheld, mut warnings) = (0, Vec::new());
    for path in files {
        let own = path.parent() == Some(logs);
        let raw = path.to_string_lossy().ends_with(".raw.log");
        if own || raw || holds(&path, text.as_bytes()) {
            continue;
        }
        let kept = raw_path(&path);
        let replaced = match keep_raw && std::fs::symlink_metadata(&kept).is_err() {
            true => std::fs::rename(&path, kept),
            false => Ok(()),
        }
        .and_then(|()| goldgate_core::fsio::write_atomic(&path, text.as_bytes()));
        match replaced {
            Ok(()) => withheld += 1,
            Err(e) => warnings.push(format!("cannot replace {}: {e}", path.display())),
        }
    }
    (withheld, warnings)
}

/// Whether the file at `path` holds exactly `text` (read only when its size says it may).
fn holds(path: &Path, text: &[u8]) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == text.len() as u64)
        && std::fs::read(path).is_ok_and(|t| t == text)
}

/// Regular files under `dir`, depth first (links and special files are left out).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

fn mask_file(path: &Path, redactor: &Redactor, keep_raw: bool) -> std::io::Result<()> {
    let tmp = path.with_file_name(format!(
        ".{}.goldgate-masking",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let changed = match write_masked(path, &tmp, redactor) {
        Ok(changed) => changed,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if !changed {
        return std::fs::remove_file(&tmp);
    }
    if keep_raw {
        std::fs::rename(path, raw_path(path))?;
    }
    std::fs::rename(&tmp, path)
}

/// Writes `path` masked into `tmp`; whether anything was masked.
fn write_masked(path: &Path, tmp: &Path, redactor: &Redactor) -> std::io::Result<bool> {
    let mut out = BufWriter::new(File::create(tmp)?);
    let changed = copy_masked(File::open(path)?, &mut out, redactor)?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(changed)
}

/// Copies `input` to `out` with `redactor`'s secrets masked, a line (at most [`PIECE`] bytes)
/// at a time; whether anything was masked. Also the Slurm executor's, for the output a
/// goldgate that died never read.
pub(crate) fn copy_masked(
    input: impl Read,
    out: &mut impl Write,
    redactor: &Redactor,
) -> std::io::Result<bool> {
    let mut input = BufReader::new(input);
    let mut piece = Vec::new();
    let mut changed = false;
    loop {
        piece.clear();
        let n = (&mut input).take(PIECE).read_until(b'\n', &mut piece)?;
        if n == 0 {
            break;
        }
        let masked = match piece.last() {
            Some(b'\n') => redactor.redact(&piece),
            _ => redactor.redact_cut(&piece),
        };
        changed |= matches!(masked, std::borrow::Cow::Owned(_));
        out.write_all(&masked)?;
    }
    Ok(changed)
}

/// `stdout.log` → `stdout.raw.log`, `error.json` → `error.json.raw.log`.
fn raw_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".log").unwrap_or(&name);
    path.with_file_name(format!("{stem}.raw.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::from_env([("HF_TOKEN", "hf-secret-123")])
    }

    #[test]
    fn rank_logs_are_masked_and_raw_copies_kept_only_on_request() {
        for keep_raw in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let logs = dir.path();
            let rank = logs.join("none_x/attempt_0/0");
            std::fs::create_dir_all(&rank).unwrap();
            let stdout = rank.join("stdout.log");
            std::fs::write(&stdout, "token hf-secret-123\nno newline hf-secret-123").unwrap();
            let clean = rank.join("stderr.log");
            std::fs::write(&clean, "nothing here\n").unwrap();
            let console = logs.join("console.log");
            std::fs::write(&console, "hf-secret-123 (masked as it streamed, not here)").unwrap();
            let outside = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(outside.path(), "hf-secret-123").unwrap();
            std::os::unix::fs::symlink(outside.path(), rank.join("linked.log")).unwrap();
            assert!(mask(logs, &console, &redactor(), keep_raw).is_empty());
            assert_eq!(
                std::fs::read_to_string(&stdout).unwrap(),
                "token <redacted>\nno newline <redacted>"
            );
            assert_eq!(std::fs::read_to_string(&clean).unwrap(), "nothing here\n");
            assert!(
                std::fs::read_to_string(&console)
                    .unwrap()
                    .starts_with("hf-secret-123")
            );
            assert_eq!(
                std::fs::read_to_string(outside.path()).unwrap(),
                "hf-secret-123"
            );
            let raw = rank.join("stdout.raw.log");
            assert_eq!(raw.exists(), keep_raw);
            if keep_raw {
                assert!(
                    std::fs::read_to_string(&raw)
                        .unwrap()
                        .contains("hf-secret-123")
                );
            }
            let names: Vec<String> = std::fs::read_dir(&rank)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert!(
                !names.iter().any(|n| n.contains("goldgate-masking")),
                "{names:?}"
            );
        }
    }

    #[test]
    fn per_rank_logs_that_cannot_be_masked_are_withheld_and_goldgates_own_left_alone() {
        for keep_raw in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let logs = dir.path();
            let rank = logs.join("none_x/attempt_0/0");
            std::fs::create_dir_all(&rank).unwrap();
            std::fs::write(rank.join("stdout.log"), "unknown secret s3cr3t\n").unwrap();
            std::fs::write(logs.join("console.log"), "masked as it streamed\n").unwrap();
            assert_eq!(withhold(logs, "[withheld]", keep_raw), (1, Vec::new()));
            assert_eq!(
                std::fs::read_to_string(rank.join("stdout.log")).unwrap(),
                "[withheld]\n"
            );
            assert_eq!(
                std::fs::read_to_string(logs.join("console.log")).unwrap(),
                "masked as it streamed\n"
            );
            let raw = rank.join("stdout.raw.log");
            assert_eq!(
                std::fs::read_to_string(&raw).ok().as_deref(),
                keep_raw.then_some("unknown secret s3cr3t\n")
            );
        }
    }

    #[test]
    fn withholding_again_never_overwrites_the_raw_copy_kept_the_first_time() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path();
        let rank = logs.join("none_x/attempt_0/0");
        std::fs::create_dir_all(&rank).unwrap();
        std::fs::write(rank.join("stdout.log"), "unknown secret s3cr3t\n").unwrap();
        assert_eq!(withhold(logs, "[withheld]", true), (1, Vec::new()));
        // A second settle (`cancel` again), with the same note or another.
        assert_eq!(withhold(logs, "[withheld]", true), (0, Vec::new()));
        assert_eq!(withhold(logs, "[withheld: other]", true), (1, Vec::new()));
        assert_eq!(
            std::fs::read_to_string(rank.join("stdout.raw.log")).unwrap(),
            "unknown secret s3cr3t\n"
        );
        assert_eq!(
            std::fs::read_to_string(rank.join("stdout.log")).unwrap(),
            "[withheld: other]\n"
        );
    }

    #[test]
    fn a_line_longer_than_a_piece_is_masked_piece_by_piece() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        let mut text = "x".repeat(PIECE as usize - 5);
        text.push_str(" hf-secret-123 tail\n");
        std::fs::write(&path, &text).unwrap();
        mask(
            dir.path(),
            &dir.path().join("console.log"),
            &redactor(),
            false,
        );
        let masked = std::fs::read_to_string(&path).unwrap();
        let end = &masked[masked.len() - 40..];
        assert!(
            !masked.contains("hf-secret-123") && end.contains(" <redacted>"),
            "{end}"
        );
    }
}
