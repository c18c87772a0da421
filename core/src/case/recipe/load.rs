//! Stage "case" (recipes): reading Megatron's recipe files (`tests/test_utils/recipes/**/*.yaml`)
//! and expanding them into rows exactly as Megatron's `recipe_parser.py` does: every product
//! block's lists multiplied out (cadence excluded), product keys overriding the spec, legacy
//! scopes renamed to their tier (`mr-github` → `L1`, `nightly` → `L2` ...), cadence defaulted.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::RecipeError;
use super::script::{Fields, ScriptFacts, facts, py_format, py_str};

/// Largest recipe file goldgate reads (the corpus' largest is a few tens of KiB).
const MAX_RECIPE_BYTES: u64 = 4 << 20;

/// `n_repeat` and `time_limit` (seconds) Megatron's `load_workloads` puts in every row unless
/// its caller passes others: the recipe's own values never reach the job.
const LAUNCHER_N_REPEAT: u32 = 1;
const LAUNCHER_TIME_LIMIT: u64 = 1800;

/// `_run_training.sh`'s `GPUS_PER_NODE` when nothing sets it.
const DEFAULT_GPUS_PER_NODE: u32 = 8;

/// Cadence a row gets when neither its product block nor its scope names one.
pub const DEFAULT_CADENCE: [&str; 3] = ["pr", "nightly", "mergegroup"];

/// Legacy GitHub-side scopes and the tier (and default cadence) Megatron renames them to.
/// GitLab's `mr`, `mr-slim` and the rest pass through verbatim, as in Megatron.
const SCOPE_ALIASES: [(&str, &str, Option<&str>); 4] = [
    ("mr-github-slim", "L0", None),
    ("mr-github", "L1", None),
    ("nightly", "L2", Some("nightly")),
    ("weekly", "L3", Some("weekly")),
];

/// The scope a `--scope` value or a recipe row's scope stands for.
pub fn resolve_scope(scope: &str) -> &str {
    SCOPE_ALIASES
        .iter()
        .find(|(legacy, _, _)| *legacy == scope)
        .map_or(scope, |(_, tier, _)| tier)
}

/// One row of the expanded recipes: a test case under one environment, platform and scope.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RecipeRow {
    /// The recipe file.
    pub file: PathBuf,
    /// `<model>/<test_case>`: the case folder it runs.
    pub case: String,
    /// Megatron's workload name (`{test_case}_{environment}_{platforms}` formatted).
    pub name: String,
    /// `dev` or `lts`.
    pub environment: Option<String>,
    /// `dgx_h100`, `dgx_a100`, `dgx_gb200` ...
    pub platform: Option<String>,
    /// `mr`, `L1`, `L2`, `mr-broken` ... (legacy names already renamed).
    pub scope: Option<String>,
    /// When it runs: `pr`, `nightly`, `mergegroup`, `weekly`.
    pub cadence: Vec<String>,
    /// Nodes the job takes.
    pub nodes: Option<u32>,
    /// GPUs per node the recipe allocates.
    pub gpus: Option<u32>,
    /// `n_repeat` as the recipe writes it (Megatron's launchers replace it with `--n-repeat`).
    pub n_repeat: Option<u32>,
    /// `time_limit` in seconds as the recipe writes it (replaced by `--time-limit` likewise).
    pub time_limit: Option<u64>,
    /// What the formatted script says, or why it cannot be formatted.
    pub script: Result<ScriptFacts, String>,
}

impl RecipeRow {
    /// The training script the row runs (`TRAINING_SCRIPT_PATH`), relative to Megatron-LM.
    pub fn training_script(&self) -> Option<&str> {
        self.script.as_ref().ok()?.argument("TRAINING_SCRIPT_PATH")
    }

    /// Ranks per node as `_run_training.sh` starts them: the script's exported
    /// `GPUS_PER_NODE`, else the script's default of 8 (the recipe's `gpus` is what the job
    /// allocates; rows that allocate 1 GPU still hold TP 8 cases, so Megatron's machines
    /// must give them the whole node).
    pub fn gpus_per_node(&self) -> u32 {
        self.script
            .as_ref()
            .ok()
            .and_then(|s| s.gpus_per_node)
            .unwrap_or(DEFAULT_GPUS_PER_NODE)
    }
}

/// Every row of every recipe under `dir` (recursively, `*.yaml`, sorted by path).
pub fn load_recipes(dir: &Path) -> Result<Vec<RecipeRow>, RecipeError> {
    let mut files = Vec::new();
    collect_yaml(dir, &mut files)?;
    files.sort();
    let mut rows = Vec::new();
    for file in files {
        rows.extend(load_recipe(&file)?);
    }
    Ok(rows)
}

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), RecipeError> {
    let read = |source| RecipeError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.is_dir() {
            collect_yaml(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
    Ok(())
}

/// The rows of one recipe file.
pub fn load_recipe(path: &Path) -> Result<Vec<RecipeRow>, RecipeError> {
    let read = |source| RecipeError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = crate::fsio::read_limited(path, MAX_RECIPE_BYTES).map_err(read)?;
    let bytes = bytes.map_err(|size| RecipeError::TooLarge {
        path: path.to_path_buf(),
        bytes: size,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let doc: Value = serde_saphyr::from_str(&text).map_err(|e| RecipeError::yaml(path, &e))?;
    let spec = doc
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut rows = Vec::new();
    for block in doc
        .get("products")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for fields in expand_block(path, block)? {
            rows.push(row(path, &spec, fields));
        }
    }
    Ok(rows)
}

/// One product block (`test_case: [x]`, `products: [...]`) → the field sets of its rows.
fn expand_block(path: &Path, block: &Value) -> Result<Vec<Fields>, RecipeError> {
    let Some(products) = block.get("products").and_then(Value::as_array) else {
        return Ok(Vec::new()); // Megatron skips blocks without `products`
    };
    let test_case = block
        .get("test_case")
        .and_then(|t| py_items(t).into_iter().next())
        .ok_or_else(|| RecipeError::invalid(path, "a product block has no test_case"))?;
    let outer_cadence = block.get("cadence").cloned();
    let mut out = Vec::new();
    for product in products {
        let Some(map) = product.as_object() else {
            return Err(RecipeError::invalid(path, "a product is not a mapping"));
        };
        let inner_cadence = map.get("cadence").cloned();
        let explicit = inner_cadence.or_else(|| outer_cadence.clone());
        let keys: Vec<&String> = map.keys().filter(|k| *k != "cadence").collect();
        let lists: Vec<Vec<Value>> = keys.iter().map(|k| py_items(&map[*k])).collect();
        for combination in cartesian(&lists) {
            let mut fields: Fields = keys.iter().map(|k| (*k).clone()).zip(combination).collect();
            fields.insert("test_case".to_owned(), test_case.clone());
            let cadence = row_cadence(&mut fields, explicit.as_ref());
            fields.insert("cadence".to_owned(), cadence);
            out.push(fields);
        }
    }
    Ok(out)
}

/// The items Python's `itertools.product` draws from a value: a list's items, a string's
/// characters (as Python iterates it), nothing for anything else.
fn py_items(value: &Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items.clone(),
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        _ => Vec::new(),
    }
}

/// Every combination of one item per list, the last list varying fastest (`itertools.product`).
fn cartesian(lists: &[Vec<Value>]) -> Vec<Vec<Value>> {
    lists.iter().fold(vec![Vec::new()], |acc, list| {
        acc.iter()
            .flat_map(|prefix| {
                list.iter().map(move |item| {
                    let mut next = prefix.clone();
                    next.push(item.clone());
                    next
                })
            })
            .collect()
    })
}

/// Renames a legacy scope in `fields` and returns the row's cadence: the explicit one, else
/// the alias's, else Megatron's default.
fn row_cadence(fields: &mut Fields, explicit: Option<&Value>) -> Value {
    let mut cadence = explicit.cloned();
    if let Some(Value::String(scope)) = fields.get("scope").cloned()
        && let Some((_, tier, alias_cadence)) =
            SCOPE_ALIASES.iter().find(|(legacy, _, _)| *legacy == scope)
    {
        fields.insert("scope".to_owned(), Value::String((*tier).to_owned()));
        if cadence.is_none() {
            cadence = alias_cadence.map(|c| Value::Array(vec![Value::String(c.to_owned())]));
        }
    }
    cadence.unwrap_or_else(|| {
        Value::Array(
            DEFAULT_CADENCE
                .iter()
                .map(|c| Value::String((*c).to_owned()))
                .collect(),
        )
    })
}

/// A row: the spec with the product's values on top, as Megatron's `flatten_workload` builds it.
fn row(path: &Path, spec: &Fields, product: Fields) -> RecipeRow {
    let mut fields: Fields = spec
        .iter()
        .filter(|(k, _)| !product.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    fields.extend(product);
    let text = |key: &str| match fields.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => Some(py_str(v)),
    };
    let number = |key: &str| fields.get(key).and_then(Value::as_u64);
    let model = text("model").unwrap_or_default();
    let test_case = text("test_case").unwrap_or_default();
    let name = text("name")
        .map(|n| py_format(&n, &fields).unwrap_or(n))
        .unwrap_or_default();
    RecipeRow {
        file: path.to_path_buf(),
        case: format!("{model}/{test_case}"),
        script: script_facts(&fields, &name),
        name,
        environment: text("environment"),
        platform: text("platforms"),
        scope: text("scope"),
        cadence: py_items(fields.get("cadence").unwrap_or(&Value::Null))
            .iter()
            .map(py_str)
            .collect(),
        nodes: number("nodes").and_then(|n| u32::try_from(n).ok()),
        gpus: number("gpus").and_then(|n| u32::try_from(n).ok()),
        n_repeat: number("n_repeat").and_then(|n| u32::try_from(n).ok()),
        time_limit: number("time_limit"),
    }
}

/// The script formatted as `generate_local_jobs.py` formats it: the row's values plus
/// `assets_dir`/`artifacts_dir` = `$OUTPUT_PATH` and the formatted `name`.
fn script_facts(fields: &Fields, name: &str) -> Result<ScriptFacts, String> {
    let Some(Value::String(script)) = fields.get("script") else {
        return Err("the recipe has no script".to_owned());
    };
    let mut magic = fields.clone();
    // `load_workloads` overwrites these with its own arguments before any script is formatted
    // (defaults 1 and 1800; CI passes `--n-repeat` and `--time-limit`).
    magic.insert("n_repeat".to_owned(), Value::from(LAUNCHER_N_REPEAT));
    magic.insert("time_limit".to_owned(), Value::from(LAUNCHER_TIME_LIMIT));
    for key in ["assets_dir", "artifacts_dir"] {
        magic.insert(key.to_owned(), Value::String("$OUTPUT_PATH".to_owned()));
    }
    magic.insert("name".to_owned(), Value::String(name.to_owned()));
    py_format(script, &magic).map(|text| facts(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"type: basic
spec:
  name: "{test_case}_{environment}_{platforms}"
  model: gpt
  nodes: 1
  gpus: 8
  n_repeat: 5
  platforms: dgx_a100
  script: |-
    export GPUS_PER_NODE={gpus}
    ARGUMENTS=(
        "TRAINING_SCRIPT_PATH=pretrain_gpt.py"
        "GOLDEN_VALUES_PATH=./t/{model}/{test_case}/golden_values_{environment}_{platforms}.json"
        "OUTPUT_PATH={assets_dir}"
    )
    bash ./tests/functional_tests/shell_test_utils/run_ci_test.sh ${{ARGUMENTS[@]}}
products:
  - test_case: [a]
    products:
      - environment: [dev, lts]
        scope: [mr, nightly]
      - environment: [dev]
        scope: [mr-github]
        platforms: [dgx_h100]
        gpus: [4]
  - test_case: [b]
    cadence: [weekly]
    products:
      - environment: [dev]
        scope: [weekly]
  - test_case: [no_products]
"#;

    fn rows() -> Vec<RecipeRow> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gpt.yaml");
        std::fs::write(&path, RECIPE).unwrap();
        load_recipe(&path).unwrap()
    }

    #[test]
    fn products_multiply_out_in_python_order() {
        let rows = rows();
        let got: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {} {}",
                    r.name,
                    r.scope.as_deref().unwrap_or("-"),
                    r.cadence.join("+"),
                    r.gpus.unwrap_or(0),
                    r.gpus_per_node()
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "a_dev_dgx_a100 mr pr+nightly+mergegroup 8 8",
                "a_dev_dgx_a100 L2 nightly 8 8",
                "a_lts_dgx_a100 mr pr+nightly+mergegroup 8 8",
                "a_lts_dgx_a100 L2 nightly 8 8",
                "a_dev_dgx_h100 L1 pr+nightly+mergegroup 4 4",
                "b_dev_dgx_a100 L3 weekly 8 8",
            ]
        );
        let h100 = &rows[4];
        assert_eq!(h100.case, "gpt/a");
        assert_eq!(h100.training_script(), Some("pretrain_gpt.py"));
        let facts = h100.script.as_ref().unwrap();
        assert_eq!(
            facts.argument("GOLDEN_VALUES_PATH"),
            Some("./t/gpt/a/golden_values_dev_dgx_h100.json")
        );
        assert_eq!(facts.argument("OUTPUT_PATH"), Some("$OUTPUT_PATH"));
        assert_eq!(h100.n_repeat, Some(5));
    }

    #[test]
    fn scope_aliases_resolve_both_ways() {
        assert_eq!(resolve_scope("nightly"), "L2");
        assert_eq!(resolve_scope("mr-github"), "L1");
        assert_eq!(resolve_scope("mr"), "mr", "GitLab scopes pass through");
        assert_eq!(resolve_scope("L2"), "L2");
    }

    #[test]
    fn a_broken_file_names_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, "spec: [\n").unwrap();
        let err = load_recipe(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:", path.display())), "{err}");
    }
}
