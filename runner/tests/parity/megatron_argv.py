#!/usr/bin/env python3
"""Independent emulation of how Megatron-LM's CI turns a functional test case into command lines.

Written from the semantics of Megatron's `run_ci_test.sh` and `_run_training.sh` (no code taken
from them) for goldgate's argv-parity test (`runner/tests/integration/megatron_parity.rs`):

1. `run_ci_test.sh` edits the case file before training (`yq -i`): pretraining cases that are
   not release tests get `--exit-interval` = `--train-iters` (lightweight mode: `--exit-interval
   4`, `SKIP_PYTEST=1`, resume tests `--save-interval 2`); NeMo lightweight: `trainer.max_steps 2`.
2. `_run_training.sh` runs `envsubst` over the whole file with the names set in the environment
   (unset names stay as written), reads `MODEL_ARGS` (or `MODEL_ARGS_<run>`) with yq after
   `explode(.)` (anchors and merge keys resolved; a map without merge keys keeps duplicate keys),
   prints each entry as `key: value` (`key=value` for NeMo), trims each value through `xargs`,
   wraps it in quotes, brackets-splits it or leaves it, and `eval`s the whole line into an
   array; the ENV_VARS are exported first, so the eval expands names they define.
3. The launcher line: torchrun (`uv run --no-sync python -m torch.distributed.run`) or
   ft_launcher with `--nproc_per_node --nnodes --master_addr --master_port --node_rank
   --log-dir --tee "0:3,LAST:3" --redirects 3` (ft_launcher also `--max-restarts=3`).

The values goldgate chooses (folder paths, ports, GPUs per node) come from goldgate's own plan
(`goldgate plan --format json`); which variable gets which folder in which run is decided here.
Steps 1-2 are emulated in Python (PyYAML's node graph keeps each scalar's text as written, as yq
prints it); `xargs` and the final `eval` are the real programs, run by bash.

Usage: megatron_argv.py --root TEST_CASES --recipes RECIPES --plan PLAN.json --env ENV.json
Prints a JSON object: {"runs": [{"job": id, "run": n, "argv": [...]} | {..., "skip": why}]}.
"""

import argparse
import json
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:  # the Rust test checks for PyYAML first and skips with a message
    print("megatron_argv.py: PyYAML is not installed", file=sys.stderr)
    sys.exit(3)

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
NCCL_DEFAULTS = {
    "NCCL_PROTO": "simple",
    "NCCL_ALGO": "Ring",
    "NCCL_COLLNET_ENABLE": "0",
    "NCCL_NVLS_ENABLE": "0",
    "NCCL_TUNER_PLUGIN": "",
    "NCCL_BUFFSIZE": "4194304",
    "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",
}
MERGE_TAG = "tag:yaml.org,2002:merge"


# ---------------------------------------------------------------- recipes (recipe_parser.py)

def py_format(template, fields):
    """Python's str.format with keyword fields only (what the recipes use)."""
    return template.format(**fields)


def recipe_rows(recipes_dir):
    """(case, environment, platform, facts) for every row of every recipe."""
    rows = []
    paths = []
    for base, _, files in os.walk(recipes_dir):
        paths += [os.path.join(base, f) for f in files if f.endswith(".yaml")]
    for path in sorted(paths):
        with open(path) as fh:
            doc = yaml.safe_load(fh)
        spec = doc.get("spec") or {}
        for block in doc.get("products") or []:
            if "products" not in block:
                continue
            test_case = block["test_case"][0]
            for product in block["products"]:
                keys = [k for k in product if k != "cadence"]
                combos = [[]]
                for k in keys:
                    combos = [c + [v] for c in combos for v in product[k]]
                for combo in combos:
                    fields = {k: v for k, v in spec.items() if k not in keys}
                    fields.update(zip(keys, combo))
                    fields["test_case"] = test_case
                    rows.append(row_facts(fields))
    return rows


def row_facts(fields):
    case = "%s/%s" % (fields.get("model"), fields.get("test_case"))
    magic = dict(fields)
    magic["n_repeat"], magic["time_limit"] = 1, 1800  # load_workloads' own values win
    magic["assets_dir"] = magic["artifacts_dir"] = "$OUTPUT_PATH"
    try:
        magic["name"] = py_format(fields.get("name", ""), magic)
        script = py_format(fields.get("script", ""), magic)
    except (KeyError, ValueError, IndexError):
        script = ""
    args = {}
    block = re.search(r"^\s*ARGUMENTS=\(\s*$(.*?)^\s*\)\s*$", script, re.M | re.S)
    for line in (block.group(1).splitlines() if block else []):
        line = line.strip()
        if not (line.startswith('"') and line.endswith('"')):
            continue
        word = re.sub(r'\\(["\\$`])', r"\1", line[1:-1])
        key, _, value = word.partition("=")
        for q in ('"', "'"):
            if value.endswith(q):
                value = value[:-1]
            if value.startswith(q):
                value = value[1:]
        args[key] = value
    exported = re.search(r"^\s*(?:export\s+)?GPUS_PER_NODE=(\d+)", script, re.M)
    return {
        "case": case,
        "environment": fields.get("environment"),
        "platform": fields.get("platforms"),
        "functional": "functional_tests/shell_test_utils/run_ci_test.sh" in script,
        "script": args.get("TRAINING_SCRIPT_PATH"),
        "gpus": int(exported.group(1)) if exported else fields.get("gpus"),
        "nodes": fields.get("nodes"),
    }


# ---------------------------------------------------------------- envsubst and the YAML graph

def envsubst(text, env):
    def sub(m):
        name = m.group(1) or m.group(2)
        return env[name] if name in env else m.group(0)
    return re.sub(r"\$\{(%s)\}|\$(%s)" % (NAME, NAME), sub, text)


def top(doc, key):
    """The value node of a top-level key (the first one, as yq finds it)."""
    for k, v in doc.value:
        if k.value == key:
            return v
    return None


def scalar_text(node):
    return node.value if isinstance(node, yaml.ScalarNode) else None


def is_null(node):
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")


def map_get(node, key):
    """yq's read of `.key` on a map: its own entries, else what its merge sources hold."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if k.value == key and k.tag != MERGE_TAG:
            return v
    for k, v in node.value:
        if k.tag == MERGE_TAG:
            for src in (v.value if isinstance(v, yaml.SequenceNode) else [v]):
                found = map_get(src, key)
                if found is not None:
                    return found
    return None


def map_set(doc, map_key, key, value_node):
    """yq -i `.MAP.key = value`: replace the entry where a read finds it, else append one."""
    node = top(doc, map_key)
    if node is None or is_null(node):
        node = yaml.MappingNode("tag:yaml.org,2002:map", [])
        entries = [(k, v) for k, v in doc.value if k.value != map_key]
        doc.value[:] = entries + [(yaml.ScalarNode("tag:yaml.org,2002:str", map_key), node)]
    target = find_entry(node, key)
    if target is not None:
        owner, index = target
        owner.value[index] = (owner.value[index][0], value_node)
    else:
        node.value.append((yaml.ScalarNode("tag:yaml.org,2002:str", key), value_node))


def find_entry(node, key):
    for i, (k, _) in enumerate(node.value):
        if k.value == key and k.tag != MERGE_TAG:
            return node, i
    for k, v in node.value:
        if k.tag == MERGE_TAG:
            for src in (v.value if isinstance(v, yaml.SequenceNode) else [v]):
                found = find_entry(src, key)
                if found is not None:
                    return found
    return None


def int_node(n):
    return yaml.ScalarNode("tag:yaml.org,2002:int", str(n))


def explode_entries(node):
    """yq `explode(.)` of one map: merge sources' entries, then own entries overriding in place;
    a map without merge keys is left as it is (duplicates included)."""
    if not any(k.tag == MERGE_TAG for k, _ in node.value):
        return list(node.value)
    out = []

    def put(key, value, own_index):
        for i, (k, _) in enumerate(out):
            if k.value == key.value:
                out[i] = (k, value)
                return
        later = [k for k, _ in node.value[own_index + 1:] if k.tag != MERGE_TAG]
        if any(k.value == key.value for k in later):
            return  # a later entry of the map itself sets it
        out.append((key, value))

    for index, (k, v) in enumerate(node.value):
        if k.tag != MERGE_TAG:
            put(k, v, index)
            continue
        sources = v.value if isinstance(v, yaml.SequenceNode) else [v]
        for src in reversed(sources):
            for sk, sv in explode_entries(src):
                put(sk, sv, index)
    return out


# ---------------------------------------------------------------- run_ci_test.sh's edits

def ci_edits(doc, is_nemo, lightweight):
    test_type = scalar_text(top(doc, "TEST_TYPE"))
    mode = scalar_text(top(doc, "MODE")) or "pretraining"
    if mode == "pretraining" and test_type != "release":
        if lightweight and is_nemo:
            map_set(doc, "MODEL_ARGS", "trainer.max_steps", int_node(2))
        elif lightweight:
            map_set(doc, "ENV_VARS", "SKIP_PYTEST", int_node(1))
            map_set(doc, "MODEL_ARGS", "--exit-interval", int_node(4))
            if test_type in ("ckpt-resume", "frozen-resume"):
                map_set(doc, "MODEL_ARGS", "--save-interval", int_node(2))
        elif not is_nemo:
            iters = map_get(top(doc, "MODEL_ARGS"), "--train-iters")
            copy = yaml.ScalarNode(iters.tag, iters.value) if iters is not None else None
            map_set(doc, "MODEL_ARGS", "--exit-interval",
                    copy or yaml.ScalarNode("tag:yaml.org,2002:null", "null"))
    elif mode == "inference" and test_type != "release" and lightweight and not is_nemo:
        map_set(doc, "ENV_VARS", "SKIP_PYTEST", int_node(1))


# ---------------------------------------------------------------- _run_training.sh

class Unsupported(Exception):
    pass


def yq_lines(entries, sep):
    """`.key + sep + (select(.value != "") | .value | tostring)` for every entry."""
    lines = []
    for k, v in entries:
        if not isinstance(v, yaml.ScalarNode):
            raise Unsupported("`%s` holds a list or map" % k.value)
        if v.value == "" and v.tag.endswith(":str"):
            continue
        text = "true" if v.value == "true" else v.value
        lines.extend((k.value + sep + text).split("\n"))
    return lines


def xargs_trim(value):
    if not re.search(r"['\"\\]", value):
        return " ".join(value.split())
    done = subprocess.run(["xargs"], input=value + "\n", capture_output=True, text=True)
    if done.returncode != 0:
        raise Unsupported("xargs rejects the value %r: %s" % (value, done.stderr.strip()))
    return done.stdout.rstrip("\n")


def megatron_line(lines):
    out = ""
    for line in lines:
        if not line:
            continue
        key = line.split(":", 1)[0]
        value = line.split(": ", 1)[1] if ": " in line else line
        value = xargs_trim(value)
        if value == "true":
            out += key + " "
        elif re.fullmatch(r"\([^)]+\)", value):
            out += '%s "%s" ' % (key, value)
        elif re.fullmatch(r"\[[^]]+\]", value):
            out += "%s %s " % (key, value[1:-1])
        elif any(c in value for c in " |()"):
            out += '%s "%s" ' % (key, value)
        else:
            out += "%s %s " % (key, value)
    return out[:-1] if out.endswith(" ") else out


def nemo_line(lines):
    out = ""
    for line in lines:
        if not line:
            continue
        if line.endswith("=true"):
            out += line[: -len("=true")] + " "
        elif re.fullmatch(r".*=.*\s.*", line, re.S):
            key, _, value = line.partition("=")
            out += '%s="%s" ' % (key, value)
        else:
            out += line + " "
    return out[:-1] if out.endswith(" ") else out


def bash_eval(line, env, cwd):
    """The real `eval "ARRAY=(line)"`, in an empty folder so no glob can match a file."""
    script = 'eval "ARRAY=($1)" && printf "%s\\0" "${ARRAY[@]}"'
    done = subprocess.run(["bash", "-c", script, "bash", line], env=env, cwd=cwd,
                          capture_output=True)
    if done.returncode != 0:
        raise Unsupported("bash cannot eval the line: %s" % done.stderr.decode().strip())
    return [w.decode() for w in done.stdout.split(b"\0")[:-1]]


def env_var_exports(doc):
    """ENV_VARS as `_run_training.sh` exports them: `key=value` text, in file order."""
    node = top(doc, "ENV_VARS")
    out = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in explode_entries(node):
            out[k.value] = "" if is_null(v) and v.value in ("", "~", "null") else v.value
    return out


# ---------------------------------------------------------------- one job of goldgate's plan

def runs_of(doc):
    """Run numbers and the MODEL_ARGS key each run reads, as run_ci_test.sh orders them."""
    test_type = scalar_text(top(doc, "TEST_TYPE"))
    if test_type == "checkpoint-consistency":
        keys = [k.value for k, _ in doc.value if re.fullmatch(r"MODEL_ARGS(_\d+)?", k.value)]
        return [(1 if k == "MODEL_ARGS" else int(k.split("_")[-1]), k) for k in keys]
    numbers = [1, 2] if test_type in ("ckpt-resume", "frozen-resume") else [1]
    out = []
    for n in numbers:
        key = "MODEL_ARGS_%d" % n
        out.append((n, key if n > 1 and top(doc, key) is not None else "MODEL_ARGS"))
    return out


def job_argv(job, config_text, row, caller, cwd):
    """Every run's command line for one planned job."""
    training_script = (row or {}).get("script") or "pretrain_gpt.py"
    is_nemo = "nemo" in training_script.lower()
    lightweight = caller.get("ENABLE_LIGHTWEIGHT_MODE") == "true"
    raw = yaml.compose(config_text)
    lw_node = map_get(top(raw, "ENV_VARS"), "ENABLE_LIGHTWEIGHT_MODE")
    lightweight = lightweight or scalar_text(lw_node) == "true"
    test_type = scalar_text(top(raw, "TEST_TYPE"))
    dirs = job["dirs"]
    frozen = caller.get("DATA_PATH", "")
    out = []
    for index, (number, key) in enumerate(runs_of(raw)):
        run = job["runs"][index] if index < len(job["runs"]) else {}
        save, load = dirs["checkpoints"], dirs["scratch"]
        if test_type in ("frozen-start", "checkpoint-consistency", "release"):
            load = frozen
        if test_type == "ckpt-resume" and number == 2:
            load = save
        if test_type == "frozen-resume" and number == 2:
            load, save = frozen, dirs["scratch"]
        if test_type == "checkpoint-consistency":
            save = os.path.join(dirs["checkpoints"], "repeat_%d_key_%s" % (job["repeat"], key))
        tensorboard = dirs["tensorboard"]
        if test_type in ("ckpt-resume", "frozen-resume"):
            tensorboard = os.path.join(tensorboard, "run_%d" % number)
        env = dict(caller)
        for name, value in NCCL_DEFAULTS.items():
            env.setdefault(name, value)
        env.update({
            "CHECKPOINT_SAVE_PATH": save, "CHECKPOINT_LOAD_PATH": load,
            "TENSORBOARD_PATH": tensorboard, "DATA_CACHE_PATH": dirs["data_cache"],
            "OUTPUT_PATH": dirs["output"], "REPEAT": str(job["repeat"]),
            "RUN_NUMBER": str(number), "TRAINING_SCRIPT_PATH": training_script,
            "INFERENCE_OUTPUT_PATH": os.path.join(dirs["output"], "inference_output.json"),
        })
        doc = yaml.compose(envsubst(config_text, env))
        ci_edits(doc, is_nemo, lightweight)
        env.update(env_var_exports(doc))
        env["LOG_DIR"] = dirs["logs"]
        gpus = run.get("nproc") or job["nproc"]
        try:
            if is_nemo:
                entries = explode_entries(top(doc, "MODEL_ARGS")) if isinstance(
                    top(doc, "MODEL_ARGS"), yaml.MappingNode) else []
                params = bash_eval(nemo_line(yq_lines(entries, "=")), env, cwd)
            else:
                node = top(doc, key)
                entries = explode_entries(node) if isinstance(node, yaml.MappingNode) else []
                params = bash_eval(megatron_line(yq_lines(entries, ": ")), env, cwd)
        except Unsupported as e:
            out.append({"job": job["id"], "run": index + 1, "skip": str(e)})
            continue
        launcher = scalar_text(top(doc, "LAUNCHER")) or "torchrun"
        words = ["ft_launcher" if launcher == "ft_launcher" else "torchrun",
                 "--nproc_per_node", str(gpus), "--nnodes", str(job["nodes"]),
                 "--master_addr", caller.get("MASTER_ADDR", "localhost"),
                 "--master_port", "${MASTER_PORT}", "--node_rank", "0",
                 "--log-dir", dirs["logs"], "--tee", "0:3,%d:3" % (gpus - 1), "--redirects", "3"]
        if launcher == "ft_launcher":
            words.append("--max-restarts=3")
        if is_nemo:
            words += ["--no-python"] + ("/opt/venv/bin/" + training_script).split()
        else:
            words.append(os.path.normpath(training_script))
        out.append({"job": job["id"], "run": index + 1, "argv": words + params, "nemo": is_nemo})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--recipes", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--env", required=True)
    ap.add_argument("--cwd", required=True, help="an empty folder for bash's eval")
    a = ap.parse_args()
    with open(a.plan) as fh:
        jobs = json.load(fh)
    with open(a.env) as fh:
        caller = json.load(fh)
    rows = recipe_rows(a.recipes)
    results = []
    for job in jobs:
        case_rows = [r for r in rows if r["case"] == job["case"]]
        pick = [r for r in case_rows if r["environment"] == "dev"
                and r["platform"] == job["platform"]]
        pick = pick or [r for r in case_rows if r["environment"] == "dev"] or case_rows
        row = pick[0] if pick else None
        if row is not None and not row["functional"]:
            results.append({"job": job["id"], "run": 0,
                            "skip": "its recipe does not run run_ci_test.sh"})
            continue
        with open(os.path.join(a.root, job["case"], "model_config.yaml")) as fh:
            text = fh.read()
        results += job_argv(job, text, row, caller, a.cwd)
    json.dump({"runs": results}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
