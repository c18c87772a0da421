"""A/A false alarms of the within-job gate by resampling (analyze.py's test and rule) with more
replicates: a false alarm is the gate failing (a regression on either timed metric).

    python3 aa_rate.py ANALYZE_DIR RECORDS_DIR REPLICATES [SEED]

RECORDS_DIR holds the calls' tarballs unpacked (c1 ... c6). The pool: the A/A jobs (parts aa*,
eager) and the plant jobs with their delay taken off B's windows."""
import sys, random, statistics, math
sys.path.insert(0, sys.argv[1])
import analyze as A
root, n = sys.argv[2], int(sys.argv[3])
jobs = [j for j in A.load_jobs(root) if any(u["arm"] == "a" for u in j["units"])]
pool = []
for j in jobs:
    seq = [dict(u) for u in A.design_units(j)]
    if j["delay"] > 0:
        for u in seq:
            if u["arm"] == "b":
                u["window"] -= j["delay"]
    if j["part"].startswith("aa") or j["part"] == "eager" or j["delay"] > 0:
        pool.append((j, seq))
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 31)
win = stp = both = 0
for _ in range(n):
    seqs = [rng.choice(pool)[1] for _ in range(A.LOOKS)]
    v, alarm, used, _ = A.sequential(seqs, 0.0, rng)
    win += v == "regression"
    both += alarm
    stp += alarm and v != "regression"
p = both / n
print(f"pool {len(pool)} sequences, {n} replicates: window regression {100*win/n:.2f} %, "
      f"iteration-time only {100*stp/n:.2f} %, gate false alarm (either) {100*p:.2f} % "
      f"(SE {100*math.sqrt(p*(1-p)/n):.2f} %)")
