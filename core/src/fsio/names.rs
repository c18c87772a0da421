//! Names that become parts of paths: a case (`<model>/<case>`), a platform, a variant slug or a
//! run id read from `results.json`, `run.json` or the command line. A hostile or broken file
//! (`"case": "../../../x"`, `--platform '../..'`) must never make goldgate write outside the
//! folder it was given, so every boundary that reads such a name checks it here.

/// Checks that `name` is one plain path component: not empty, not `.` or `..`, without `/`
/// or NUL, at most 255 bytes. `what` names it in the message (`platform`, `variant slug`).
pub fn check_component(what: &str, name: &str) -> Result<(), String> {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name == "." || name == ".." {
        Some("is `.` or `..`")
    } else if name.contains('/') {
        Some("contains `/`")
    } else if name.contains('\0') {
        Some("contains a NUL byte")
    } else if name.len() > 255 {
        Some("is longer than 255 bytes")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(format!(
            "{what} `{}` {problem}: it must be one plain path component",
            name.escape_debug()
        )),
    }
}

/// Checks that `name` is a relative path of plain components separated by single `/`
/// (`gpt/case`): no leading `/`, no empty, `.` or `..` component.
pub fn check_relative(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("{what} is empty"));
    }
    for part in name.split('/') {
        check_component(what, part).map_err(|_| {
            format!(
                "{what} `{}` is not a relative path of plain components (no leading `/`, \
                 no empty, `.` or `..` part)",
                name.escape_debug()
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_components_pass_and_traversal_is_refused() {
        for good in [
            "dgx_h100",
            "allocator-gc80+checkpoint-async",
            "a.b",
            "20261130-1",
        ] {
            assert_eq!(check_component("platform", good), Ok(()), "{good}");
        }
        for bad in ["", ".", "..", "../..", "a/b", "x\0y"] {
            assert!(check_component("platform", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_component("platform", "../..").unwrap_err(),
            "platform `../..` contains `/`: it must be one plain path component"
        );
        assert!(check_component("slug", &"x".repeat(256)).is_err());
    }

    #[test]
    fn relative_paths_of_plain_parts_pass() {
        assert_eq!(check_relative("case", "gpt/ckpt"), Ok(()));
        assert_eq!(check_relative("case", "a/b/c"), Ok(()));
        for bad in ["../../../x", "/etc/x", "gpt//x", "gpt/./x", "gpt/", ""] {
            assert!(check_relative("case", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_relative("case", "../../../x").unwrap_err(),
            "case `../../../x` is not a relative path of plain components (no leading `/`, \
             no empty, `.` or `..` part)"
        );
    }
}
