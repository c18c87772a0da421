"""Issue 31's within-job study, from the records the H200 calls brought back (pure Python, no
goldgate code: an independent reading of what `goldgate ab --within-job` decided).

    python3 analyze.py DIR [--replicates N]

DIR holds the calls' unpacked folders (`<call>/<part>/<ab id>/<NN-ab>/results.json` and each
part's `ab.json`). Prints markdown: the real decisions, the per-save breakdown (which part of a
save carries its variance), carry-over and order checks, and detection / false-alarm rates from
resampling the unchanged save sequences with fresh coins (the signed-rank test re-implemented
here, with the product's alpha split: 0.01 each way over 2 metrics x 3 looks)."""

import glob
import json
import math
import os
import random
import statistics
import sys

ALPHA, METRICS, LOOKS, MIN_EFFECT = 0.01, 2, 3, 0.03


# ---------------------------------------------------------------- records


def load_jobs(root):
    """Every within-job job: its part, run id, wall time, planted delay and units."""
    jobs = []
    for ab_path in sorted(glob.glob(os.path.join(root, "**", "ab.json"), recursive=True)):
        ab = json.load(open(ab_path))
        if ab.get("mode", {}).get("kind") != "within-job":
            continue
        part = os.path.basename(os.path.dirname(os.path.dirname(ab_path)))
        base = os.path.dirname(ab_path)
        b_switches = ab["arms"][1].get("switches", [])
        delay = 0.0
        for s in b_switches:
            if s.startswith("save-delay="):
                delay = float(s.split("=", 1)[1])
        for job in ab["jobs"]:
            path = os.path.join(base, job["results"])
            if not os.path.exists(path):
                continue
            r = json.load(open(path))
            if r["outcome"]["status"] != "passed":
                continue
            jobs.append({"part": part, "ab": ab, "run": job["run_id"], "delay": delay,
                         "switches": b_switches, "wall": r["wall_seconds"], "units": units(r)})
    return jobs


def units(record):
    steps = record["metrics"].get("iteration-time", {})
    steps = {int(k): v for k, v in steps.items() if isinstance(v, (int, float))}
    saves = record["checkpoints"]
    out = []
    for i, c in enumerate(saves):
        p = c.get("probe")
        if not p:
            continue
        nxt = saves[i + 1]["iteration"] if i + 1 < len(saves) else 10**12
        after = [v for k, v in steps.items() if c["iteration"] < k <= nxt]
        out.append({"index": i, "iteration": c["iteration"], "arm": p.get("arm"),
                    "window": p["seconds"], "parts": p.get("parts", {}),
                    "steps": sum(after) / len(after) if after else None})
    return out


def design_units(job):
    """The units inside the design (an arm recorded), in save order."""
    return [u for u in job["units"] if u["arm"] in ("a", "b")]


# ---------------------------------------------------------------- the test


_NULL = {}


def null_cdf(n):
    if n not in _NULL:
        top = n * (n + 1) // 2
        p = [0.0] * (top + 1)
        p[0] = 1.0
        for rank in range(1, n + 1):
            for w in range(rank * (rank + 1) // 2, -1, -1):
                p[w] = 0.5 * (p[w] + (p[w - rank] if w >= rank else 0.0))
        acc, cdf = 0.0, []
        for v in p:
            acc += v
            cdf.append(acc)
        _NULL[n] = cdf
    return _NULL[n]


def hodges_lehmann(d, tail):
    n = len(d)
    if n == 0:
        return None
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    m = len(walsh)
    est = walsh[m // 2] if m % 2 else (walsh[m // 2 - 1] + walsh[m // 2]) / 2
    k = sum(1 for p in null_cdf(n) if p <= tail)
    if k == 0:
        return est, -math.inf, math.inf
    return est, walsh[k - 1], walsh[m - k]


def verdict(lo, hi):
    if lo > 0:
        return "regression"
    if hi < 0:
        return "improvement"
    if math.expm1(hi) < MIN_EFFECT:
        return "pass"
    return "undecided"


def pairs_of(seq, coins, delay):
    """(ln B − ln A of the window, of the steps) per design pair of one unchanged sequence of
    units, arms re-drawn by `coins`, `delay` seconds added to each B window."""
    win, stp = [], []
    for k in range(len(seq) // 2):
        x, y = seq[2 * k], seq[2 * k + 1]
        a, b = (x, y) if coins[k] == 0 else (y, x)
        win.append(math.log(b["window"] + delay) - math.log(a["window"]))
        if a["steps"] and b["steps"]:
            stp.append(math.log(b["steps"]) - math.log(a["steps"]))
    return win, stp


def sequential(seqs, delay, rng):
    """The product's rule over up to LOOKS jobs: (window verdict, any regression, jobs used,
    the window's last interval as shares)."""
    tail = ALPHA / (METRICS * LOOKS)
    win, stp = [], []
    for used, seq in enumerate(seqs, 1):
        coins = [rng.randrange(2) for _ in range(len(seq) // 2)]
        w, s = pairs_of(seq, coins, delay)
        win += w
        stp += s
        e_w, lo_w, hi_w = hodges_lehmann(win, tail)
        v_w = verdict(math.expm1(lo_w), math.expm1(hi_w))
        _, lo_s, hi_s = hodges_lehmann(stp, tail) if stp else (0, -math.inf, math.inf)
        v_s = verdict(math.expm1(lo_s), math.expm1(hi_s))
        alarm = "regression" in (v_w, v_s)
        if alarm or (v_w != "undecided" and v_s != "undecided"):
            return v_w, alarm, used, (math.expm1(lo_w), math.expm1(hi_w))
    return v_w, alarm, used, (math.expm1(lo_w), math.expm1(hi_w))


# ---------------------------------------------------------------- sections


def pct(x):
    return "%+.1f %%" % (100 * x)


def real_decisions(jobs):
    print("## The real decisions (`goldgate ab --within-job`, ab.json)\n")
    print("| part | B | jobs | save pairs | GPU-min | metric | A | B | change | interval | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    seen = set()
    for j in jobs:
        ab = j["ab"]
        if ab["id"] in seen:
            continue
        seen.add(ab["id"])
        for m in ab["metrics"]:
            if m["test"] != "signed-rank" and m["metric"] != "checkpoint-empty-cache-calls":
                continue
            iv = m.get("interval")
            print("| %s | %s | %d | %d | %.1f | %s | %s | %s | %s | %s | %s |" % (
                j["part"], ", ".join(j["switches"]) or "as A", len(ab["jobs"]), ab["pairs"],
                ab["job_seconds"] / 60, m["metric"],
                "%.4g" % m["a"] if m.get("a") is not None else "—",
                "%.4g" % m["b"] if m.get("b") is not None else "—",
                pct(m["change"]) if m.get("change") is not None else "—",
                "%s to %s" % (pct(iv[0]), pct(iv[1])) if iv else "—", m["verdict"]))
    print()


def sd_ln(values):
    v = [math.log(x) for x in values if x and x > 0]
    return statistics.stdev(v) if len(v) > 2 else float("nan")


def breakdown(jobs):
    """Which part of the window carries its variance, over the A units of every job (and B's
    of the A/A jobs): window = outside dist_checkpointing.save + (fsync + CPU + other wait
    inside it); each part's share is cov(part, window) / var(window) (they add up to 1)."""
    rows = []
    for j in jobs:
        for u in design_units(j):
            if u["arm"] == "a" or j["part"] == "aa":
                p = u["parts"]
                if p.get("dist_save_seconds") is None:
                    continue
                rows.append((j["part"], u, p))
    if not rows:
        print("## Per-save breakdown\n\nno save recorded its parts.\n")
        return
    w = [u["window"] for _, u, _ in rows]
    dist = [p["dist_save_seconds"] for _, _, p in rows]
    fs = [p.get("fsync_seconds") or 0.0 for _, _, p in rows]
    # Wall-time parts that add up to the window (each part's share of the window's variance is
    # cov(part, window) / var(window); the shares add up to 100 %).
    parts = {
        "outside dist_checkpointing.save": [a - b for a, b in zip(w, dist)],
        "fsync (inside dist save)": fs,
        "dist save less fsync": [d - f for d, f in zip(dist, fs)],
    }
    mw = statistics.fmean(w)
    var = statistics.fmean([(x - mw) ** 2 for x in w])
    print("## Per-save breakdown (%d saves: arm A of every job, both arms of the A/A jobs)\n" % len(rows))
    print("window median %.0f ms, SD of ln %.1f %%; dist_checkpointing.save %.1f %% of the window; "
          "fsync %.1f calls a save\n" % (
              1000 * statistics.median(w), 100 * sd_ln(w),
              100 * sum(dist) / sum(w),
              statistics.fmean([p.get("fsync_calls") or 0 for _, _, p in rows])))
    print("| wall-time part | median ms | SD ms | share of the window's variance |")
    print("|---|---|---|---|")
    for name, vals in parts.items():
        mv = statistics.fmean(vals)
        cov = statistics.fmean([(x - mw) * (y - mv) for x, y in zip(w, vals)])
        print("| %s | %.1f | %.1f | %.0f %% |" % (name, 1000 * statistics.median(vals),
                                                 1000 * statistics.pstdev(vals), 100 * cov / var))
    cpu = [p.get("dist_save_cpu_seconds") for _, _, p in rows]
    if all(c is not None for c in cpu):
        mc = statistics.fmean(cpu)
        slope = statistics.fmean([(x - mw) * (c - mc) for x, c in zip(w, cpu)]) / statistics.fmean([(c - mc) ** 2 for c in cpu])
        print("\nProcess CPU time inside dist_checkpointing.save (every thread): median %.0f ms, SD %.0f ms, "
              "correlation with the window %.2f; the window grows %.2f ms per ms of that CPU time.\n" % (
                  1000 * statistics.median(cpu), 1000 * statistics.pstdev(cpu), corr(w, cpu), slope))
    extra = [("minor page faults", "minor_faults"), ("major page faults", "major_faults"),
             ("voluntary switches", "voluntary_switches"), ("involuntary switches", "involuntary_switches"),
             ("process CPU in window (ms)", "cpu_seconds")]
    print("\n| counter per save | median | corr. with window |")
    print("|---|---|---|")
    for name, key in extra:
        vals = [p.get(key) for _, _, p in rows]
        if any(v is None for v in vals):
            continue
        vals = [float(v) * (1000 if key == "cpu_seconds" else 1) for v in vals]
        print("| %s | %.0f | %.2f |" % (name, statistics.median(vals), corr(w, vals)))
    print()


def corr(x, y):
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sx = math.sqrt(sum((a - mx) ** 2 for a in x))
    sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (sx * sy) if sx and sy else float("nan")


def mean_ci(v):
    m = statistics.fmean(v)
    se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else float("inf")
    return m, m - 1.96 * se, m + 1.96 * se


def checks(jobs):
    """Carry-over (A after A against A after B, both arms of the A/A jobs), the order effect
    (second save of a pair against the first) and the end-of-job profile."""
    print("## Carry-over and order (unchanged jobs: A/A, and every job's A units)\n")
    after_a, after_b = [], []
    for j in jobs:
        seq = design_units(j)
        med = statistics.median(math.log(u["window"]) for u in seq if u["arm"] == "a")
        for prev, u in zip(seq, seq[1:]):
            if u["arm"] != "a":
                continue
            (after_a if prev["arm"] == "a" else after_b).append(math.log(u["window"]) - med)
    if after_a and after_b:
        d = statistics.fmean(after_a) - statistics.fmean(after_b)
        se = math.sqrt(statistics.variance(after_a) / len(after_a) + statistics.variance(after_b) / len(after_b))
        print("- A after A (%d) against A after B (%d), window, each job's A median removed: %s "
              "(95 %% CI %s to %s)" % (len(after_a), len(after_b), pct(math.expm1(d)),
                                       pct(math.expm1(d - 1.96 * se)), pct(math.expm1(d + 1.96 * se))))
    aa = [j for j in jobs if j["part"] == "aa"]
    order = []
    for j in aa:
        seq = design_units(j)
        order += [math.log(seq[2 * k + 1]["window"]) - math.log(seq[2 * k]["window"]) for k in range(len(seq) // 2)]
    if order:
        m, lo, hi = mean_ci(order)
        print("- A/A jobs, second save of a pair against the first: %s (95 %% CI %s to %s), %d pairs: "
              "what a fixed order (AB in every pair) would report as the change; the coin makes it "
              "the sign of a fair coin" % (pct(math.expm1(m)), pct(math.expm1(lo)), pct(math.expm1(hi)), len(order)))
    for j in aa:
        seq = design_units(j)
        n = len(seq)
        x = list(range(n))
        y = [math.log(u["window"]) for u in seq]
        mx, my = statistics.fmean(x), statistics.fmean(y)
        slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
        last = statistics.fmean(y[-4:]) - statistics.median(y)
        print("- %s %s: trend %s a save over %d saves, last 4 saves %s against the job's median" % (
            j["part"], j["run"], pct(math.expm1(slope)), n, pct(math.expm1(last))))
    print()


def rates(jobs, replicates, seed=31):
    """Resampling: each replicate draws 3 unchanged sequences (A/A jobs as they are; plant jobs
    with the delay taken off B's windows), fresh coins, the delay of each size added to B."""
    pool = []
    for j in jobs:
        seq = [dict(u) for u in design_units(j)]
        if j["delay"] > 0:
            for u in seq:
                if u["arm"] == "b":
                    u["window"] -= j["delay"]
        if j["part"] in ("aa",) or j["delay"] > 0:
            pool.append((j, seq))
    if not pool:
        return
    median = statistics.median(u["window"] for _, s in pool for u in s)
    wall = statistics.fmean(j["wall"] for j, _ in pool)
    rng = random.Random(seed)
    print("## Rates from resampling (%d unchanged save sequences, %d replicates each; median window %.0f ms, job %.0f s)\n" % (
        len(pool), replicates, 1000 * median, wall))
    print("| planted | window: regression | window: pass | iteration-time: regression (false alarm) | mean jobs | GPU-min a decision | median window interval width |")
    print("|---|---|---|---|---|---|---|")
    for size in (0.0, 0.05, 0.10, 0.20):
        caught = alarm = passed = 0  # alarm: iteration-time called a regression
        used = []
        widths = []
        for _ in range(replicates):
            seqs = [rng.choice(pool)[1] for _ in range(LOOKS)]
            v, any_alarm, n, (lo, hi) = sequential(seqs, size * median, rng)
            caught += v == "regression"
            alarm += any_alarm and v != "regression"
            passed += v == "pass"
            used.append(n)
            widths.append(hi - lo)
        print("| %s | %.1f %% | %.1f %% | %.1f %% | %.2f | %.1f | %s |" % (
            "A/A" if size == 0 else "+%d %%" % round(100 * size), 100 * caught / replicates,
            100 * passed / replicates, 100 * alarm / replicates, statistics.fmean(used),
            statistics.fmean(used) * wall / 60, pct(statistics.median(widths))))
    print()


def main():
    root = sys.argv[1]
    n = int(sys.argv[sys.argv.index("--replicates") + 1]) if "--replicates" in sys.argv else 2000
    jobs = [j for j in load_jobs(root) if any(u["arm"] == "a" for u in j["units"])]
    print("# Within-job A/B on the H200: %d jobs\n" % len(jobs))
    real_decisions(jobs)
    breakdown(jobs)
    checks(jobs)
    rates(jobs, n)


if __name__ == "__main__":
    main()
