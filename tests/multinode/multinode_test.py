"""Multi-node cases on network-namespace nodes (netns_cluster.py), two nodes
of two ranks each under Open MPI over TCP.

usage: multinode_test.py CASE MPIEXEC BINARY_DIR
  ranks        dlrm_ranks_test across the nodes (sharded tables, all-to-all
               and all-reduce between namespaces): the same results as one
               process; each node's ranks see its own host name
  run_closed   run_closed --nodes 2 --bench dlrm_dcnv2 --runs 1 across the
               nodes: the result log equals that of 4 ranks on one node apart
               from times, and the system description states 2 nodes
  nodes        --nodes left at 1 for ranks on 2 nodes: one line and exit 2,
               nothing written
  lost_rank    rank 3 (on node 1) killed after the first of three runs: every
               rank ends within a minute, the exit code non-zero and the
               lost rank and node named (by mpirun); the finished run kept,
               the broken one not published; a second invocation into the
               package refused, nothing changed
  rendezvous   the TCP rendezvous that bootstraps NCCL without MPI: rank 0 on
               node 0 serves, rank 1 on node 1 fetches; a rank that never
               joins, a rank 0 that is absent and a node whose link went
               silent each end at the timeout with one line saying which
  preflight    three nodes of one rank: run_benchmark --comm across them
               (every collective checked, 3 ranks on 3 nodes); then node 2's
               cable throttled to 20 Mbit/s: run_closed --preflight refuses
               to start, naming rank 2 on node2, exit 1, nothing written
  silent_link  node 1's link goes silent (packets dropped, nothing refused)
               in the second of three runs with --collective_timeout 5: the
               ranks on both nodes end within the bound, node 0's naming
               ranks 2 and 3 on node1; mpirun ends non-zero (TCP keepalive
               on its daemons); the finished run kept, the broken one not
               published
  silent_link_benchmark
               the same for run_benchmark --comm in the middle of its sweep
  weak_scaling run_benchmark -n 1,2,4 under mpirun across the nodes: the
               first 1, 2 and 4 ranks measured in turn, the configurations
               on 1, 1 and 2 nodes, weak scaling for each against 1 device
  slurm        Slurm on the two nodes (slurm_cluster.py): srun -N2
               --ntasks-per-node=2 run_benchmark --comm sees 4 ranks on 2
               nodes; an sbatch script as docs/cluster.md shows runs
               run_closed --nodes $SLURM_JOB_NUM_NODES: its log equals 4
               ranks' on one node apart from times (exit 77 without Slurm)
Exit 77 (skipped) without root.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from netns_cluster import Cluster


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def case_ranks(cluster, mpiexec, bin_dir):
    names = cluster.mpirun(4, ["hostname"], mpiexec)
    hosts = sorted(names.stdout.split())
    if names.returncode != 0 or hosts != ["node0", "node0", "node1", "node1"]:
        fail(f"host names {hosts} (exit {names.returncode}): {names.stderr[-1500:]}")
    r = cluster.mpirun(4, [os.path.join(bin_dir, "dlrm_ranks_test")], mpiexec)
    print(r.stdout[-3000:])
    if r.returncode != 0:
        fail(f"dlrm_ranks_test across two nodes: exit {r.returncode}: {r.stderr[-2000:]}")


def events(log):
    """A result log's events without what depends on time: time_ms, and the
    throughput's value (samples per second)."""
    out = []
    with open(log) as f:
        for line in f:
            if line.startswith(":::MLLOG "):
                e = json.loads(line[len(":::MLLOG "):])
                e.pop("time_ms", None)
                if e["key"] == "throughput":
                    e.pop("value")
                out.append(e)
    return out


def equal_to_one_node(across, tool, args, mpiexec, context=""):
    """Runs `args` on 4 ranks of this machine and compares the result log
    with the one in `across`, event for event apart from times; returns the
    number of events."""
    with tempfile.TemporaryDirectory() as one:
        r = subprocess.run([mpiexec, "--allow-run-as-root", "--oversubscribe", "--mca",
                            "rtc_hwloc_vmhole", "none", "-np", "4", "-x", "OMP_NUM_THREADS=1",
                            tool, *args, "--out", one], capture_output=True, text=True, timeout=240)
        if r.returncode != 0:
            fail(f"run_closed, 4 ranks on one node: exit {r.returncode}: {r.stderr[-2000:]}")
        logs = [glob.glob(os.path.join(d, "mlperf-suite", "results", "*", "dlrm_dcnv2",
                                       "result_0.txt")) for d in (across, one)]
        if [len(l) for l in logs] != [1, 1]:
            fail(f"result logs found: {logs}{context}")
        a, b = events(logs[0][0]), events(logs[1][0])
    differ = [(x, y) for x, y in zip(a, b) if x != y and x.get("key") != "submission_platform"]
    if len(a) != len(b) or differ:
        fail(f"{len(a)} against {len(b)} events; first differences: {differ[:3]}")
    return len(a)


def case_run_closed(cluster, mpiexec, bin_dir):
    tool = os.path.join(bin_dir, "run_closed")
    args = ["--bench", "dlrm_dcnv2", "--runs", "1", "--seed", "21"]
    with tempfile.TemporaryDirectory() as tmp:
        across = os.path.join(tmp, "across")
        r = cluster.mpirun(4, [tool, "--nodes", "2", *args, "--out", across], mpiexec)
        if r.returncode != 0:
            fail(f"run_closed across two nodes: exit {r.returncode}: {r.stderr[-2000:]}")
        n = equal_to_one_node(across, tool, args, mpiexec)
        systems = glob.glob(os.path.join(across, "mlperf-suite", "systems", "*.json"))
        nodes = [json.load(open(s)).get("number_of_nodes") for s in systems]
        if nodes != ["2"]:
            fail(f"system descriptions state number_of_nodes {nodes}")
        print(f"{n} events equal apart from times; number_of_nodes 2")


def case_nodes(cluster, mpiexec, bin_dir):
    tool = os.path.join(bin_dir, "run_closed")
    with tempfile.TemporaryDirectory() as tmp:
        # --nodes left at its default of 1.
        r = cluster.mpirun(4, [tool, "--bench", "dlrm_dcnv2", "--runs", "1", "--out", tmp],
                           mpiexec, timeout=120)
        lines = [l for l in r.stderr.split("\n") if l.startswith("run_closed:")]
        if r.returncode != 2 or len(set(lines)) != 1 or "on 2 node(s)" not in lines[0]:
            fail(f"--nodes 1 on 2 nodes: exit {r.returncode}, {r.stderr[-1500:]}")
        if os.listdir(tmp):
            fail(f"wrote {os.listdir(tmp)} before refusing")
        print(lines[0])


def rank_pid(rank):
    """The pid of run_closed's rank `rank` (ranks share this machine's pids)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if argv0.endswith(b"/run_closed") and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


def case_lost_rank(cluster, mpiexec, bin_dir):
    tool = os.path.join(bin_dir, "run_closed")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [tool, "--nodes", "2", "--bench", "dlrm_dcnv2", "--runs", "3", "--seed", "3",
                "--out", tmp]
        p = subprocess.Popen(cluster.mpirun_argv(4, argv, mpiexec), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        results = os.path.join(tmp, "mlperf-suite", "results", "*", "dlrm_dcnv2")
        started = time.time()
        while not glob.glob(os.path.join(results, "result_0.txt")):
            if p.poll() is not None or time.time() - started > 180:
                p.kill()
                fail(f"the first run never finished: {p.communicate()[1][-1500:]}")
            time.sleep(0.2)
        time.sleep(0.5)  # into the second run
        victim = rank_pid(3)
        if victim is None:
            fail("rank 3 not found")
        os.kill(victim, signal.SIGKILL)
        killed = time.time()
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("the other ranks still ran a minute after rank 3 was killed")
        print(f"exit {p.returncode} {time.time() - killed:.1f} s after the kill")
        if p.returncode == 0 or "rank 3" not in err or "10.77.0.2" not in err:
            fail(f"exit {p.returncode}; the lost rank and node unnamed: {err[-1500:]}")
        [folder] = glob.glob(results)
        files = sorted(os.listdir(folder))
        # The runs finished before the kill, from result_0, all kept whole;
        # none after them published.
        done = [f"result_{i}.txt" for i in range(3) if f"result_{i}.txt" in files]
        if not done or len(done) == 3 or done != [f"result_{i}.txt" for i in range(len(done))]:
            fail(f"results after the kill: {files}")
        for name in done:
            with open(os.path.join(folder, name)) as f:
                if '"status": "success"' not in f.read():
                    fail(f"the finished run's log {name} lost its run_stop")
        again = cluster.mpirun(4, argv, mpiexec, timeout=120)
        lines = [l for l in again.stderr.split("\n") if l.startswith("run_closed:")]
        if again.returncode == 0 or not lines or sorted(os.listdir(folder)) != files:
            fail(f"a second invocation: exit {again.returncode}, {again.stderr[-1500:]}")
        print("kept", files, "; again:", lines[0])


def case_rendezvous(cluster, mpiexec, bin_dir):
    probe = os.path.join(bin_dir, "rendezvous_probe")
    rank0 = cluster.addresses[0]

    def run(node, rank, timeout_ms, world=2):
        return subprocess.Popen(
            cluster.on_node(node, [probe, str(rank), str(world), rank0, "29517", str(timeout_ms)]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(p, what, limit_s):
        started = time.time()
        out, err = p.communicate(timeout=120)
        took = time.time() - started
        print(f"{what}: exit {p.returncode} after {took:.1f} s: {(out + err).strip()}")
        if took > limit_s:
            fail(f"{what}: took {took:.1f} s, the bound is {limit_s} s")
        return p.returncode, out + err

    # Rank 0 on node 0 serves, rank 1 on node 1 fetches over the link.
    serving, fetching = run(0, 0, 20000), run(1, 1, 20000)
    for p, what in ((serving, "rank 0"), (fetching, "rank 1")):
        code, text = finish(p, what, 30)
        if code != 0 or ("got rendezvous-probe-blob" not in text):
            fail(f"{what} across nodes: {text}")
    # A rank that never joins: rank 0 gives up at its timeout, saying so.
    code, text = finish(run(0, 0, 2000), "rank 1 never joins", 10)
    if code != 1 or "0 of 1 arrived" not in text:
        fail(f"rank 0 alone: {text}")
    # Nobody serves on node 0: refused until the timeout, the last error named.
    code, text = finish(run(1, 1, 2000), "rank 0 absent", 10)
    if code != 1 or f"could not reach rank 0 at {rank0}" not in text or "refused" not in text:
        fail(f"rank 1 with no rank 0: {text}")
    # Node 0 silent (its link down, its packets dropped): still bounded.
    cluster.silence(0)
    code, text = finish(run(1, 1, 2000), "node 0 silent", 10)
    if code != 1 or f"could not reach rank 0 at {rank0}" not in text:
        fail(f"rank 1 with node 0 silent: {text}")


def case_preflight(cluster, mpiexec, bin_dir):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "comm.json")
        r = cluster.mpirun(3, [os.path.join(bin_dir, "run_benchmark"), "--comm", "--maxbytes",
                               "1M", "--stepfactor", "16", "-o", report], mpiexec, timeout=120)
        if r.returncode != 0:
            fail(f"run_benchmark --comm across 3 nodes: exit {r.returncode}: {r.stderr[-1500:]}")
        with open(report) as f:
            comm = json.load(f)
        ops = sorted({x["collective"] for x in comm["results"]})
        if (comm["ranks"], comm["nodes"]) != (3, 3) or len(ops) != 4 or any(
                x["wrong"] != 0 or x["busbw_gbps"] <= 0 for x in comm["results"]):
            fail(f"--comm report: {json.dumps(comm)[:1500]}")
        print(r.stdout[-1200:])
        cluster.throttle(2, "20mbit")
        out = os.path.join(tmp, "package")
        os.mkdir(out)
        started = time.time()
        r = cluster.mpirun(3, [os.path.join(bin_dir, "run_closed"), "--nodes", "3", "--preflight",
                               "--bench", "dlrm_dcnv2", "--runs", "1", "--out", out], mpiexec,
                           timeout=180)
        lines = [l for l in r.stderr.split("\n") if "below" in l]
        print(f"exit {r.returncode} after {time.time() - started:.1f} s:", *lines)
        if r.returncode != 1 or len(lines) != 1 or "rank 2 on node2" not in lines[0] or any(
                f"rank {k} on node{k}" in lines[0] for k in (0, 1)):
            fail(f"--preflight with node 2 throttled: exit {r.returncode}: {r.stderr[-1500:]}")
        if os.listdir(out):
            fail(f"wrote {os.listdir(out)} before refusing")


def silence_and_wait(cluster, p, tool, err_path):
    """Silences node 1, then waits for every rank of `tool` on both nodes and
    for mpirun to end; returns mpirun's exit code and stderr."""
    cluster.silence(1)
    silenced = time.time()
    # The ranks: 5 s of waiting, 3 s of probing. mpirun: TCP keepalive or
    # retransmissions to the silent daemon give up within about 15 s.
    while time.time() - silenced < 60:
        if not cluster.running(0, tool) and not cluster.running(1, tool) and \
                p.poll() is not None:
            break
        time.sleep(0.5)
    took = time.time() - silenced
    left = cluster.running(0, tool) + cluster.running(1, tool)
    if p.poll() is None or left:
        p.kill()
        fail(f"{took:.0f} s after the link went silent: mpirun {p.poll()}, {tool} pids {left}")
    with open(err_path) as f:
        err = f.read()
    print(f"everything ended {took:.1f} s after the link went silent; mpirun exit {p.returncode}")
    said = [l for l in err.split("\n") if "do not answer" in l]
    print(*said, sep="\n")
    if p.returncode == 0 or not said or any(
            f"rank {k} on node1" not in l for l in said for k in (2, 3)):
        fail(f"the lost ranks and node unnamed: {err[-2000:]}")
    return err


def case_silent_link(cluster, mpiexec, bin_dir):
    tool = os.path.join(bin_dir, "run_closed")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        argv = [tool, "--nodes", "2", "--bench", "dlrm_dcnv2", "--runs", "3", "--seed", "3",
                "--collective_timeout", "5", "--out", out]
        err_path = os.path.join(tmp, "stderr")
        # stderr to a file: the daemon cut off on node 1 may hold a pipe open.
        with open(err_path, "w") as err:
            p = subprocess.Popen(cluster.mpirun_argv(4, argv, mpiexec),
                                 stdout=subprocess.DEVNULL, stderr=err)
        results = os.path.join(out, "mlperf-suite", "results", "*", "dlrm_dcnv2")
        started = time.time()
        while not glob.glob(os.path.join(results, "result_0.txt")):
            if p.poll() is not None or time.time() - started > 180:
                p.kill()
                fail("the first run never finished")
            time.sleep(0.2)
        time.sleep(0.5)  # into the second run
        silence_and_wait(cluster, p, "run_closed", err_path)
        [folder] = glob.glob(results)
        files = sorted(os.listdir(folder))
        done = [f"result_{i}.txt" for i in range(3) if f"result_{i}.txt" in files]
        if not done or len(done) == 3 or done != [f"result_{i}.txt" for i in range(len(done))]:
            fail(f"results after the link went silent: {files}")
        print("kept", files)


def case_silent_link_benchmark(cluster, mpiexec, bin_dir):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "comm.json")
        argv = [os.path.join(bin_dir, "run_benchmark"), "--comm", "--collectives", "all_reduce",
                "--minbytes", "1M", "--maxbytes", "1M", "-i", "100000", "--collective_timeout",
                "5", "-o", report]
        err_path = os.path.join(tmp, "stderr")
        with open(err_path, "w") as err:
            p = subprocess.Popen(cluster.mpirun_argv(4, argv, mpiexec),
                                 stdout=subprocess.DEVNULL, stderr=err)
        time.sleep(3)  # into the timed calls
        if p.poll() is not None:
            fail(f"run_benchmark --comm ended early: exit {p.returncode}")
        silence_and_wait(cluster, p, "run_benchmark", err_path)
        if os.path.exists(report):
            fail("a report was written for the broken sweep")


def case_weak_scaling(cluster, mpiexec, bin_dir):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        r = cluster.mpirun(4, [os.path.join(bin_dir, "run_benchmark"), "--size", "small", "-n",
                               "1,2,4", "-b", "8", "-w", "1", "-i", "3", "-r", "2", "-o", report],
                           mpiexec, timeout=240)
        if r.returncode != 0:
            fail(f"run_benchmark -n 1,2,4 across two nodes: exit {r.returncode}: "
                 f"{r.stderr[-1500:]}")
        configs = json.load(open(report))["configurations"]
        got = [(c["devices"], c["nodes"], c["status"]) for c in configs]
        if got != [(1, 1, "ok"), (2, 1, "ok"), (4, 2, "ok")]:
            fail(f"configurations (devices, nodes, status): {got}")
        one = configs[0]["throughput"]["median"]
        for c in configs:
            want = c["throughput"]["median"] / one
            if c["weak_scaling"] is None or abs(c["weak_scaling"] - want) > 1e-9 * want:
                fail(f"weak scaling {c['weak_scaling']} for {c['devices']}, medians say {want}")
        print("(devices, nodes, weak scaling):",
              [(c["devices"], c["nodes"], round(c["weak_scaling"], 2)) for c in configs])
        if "| 4 (2 nodes) |" not in r.stdout:
            fail(f"the Markdown table does not say 2 nodes: {r.stdout[-1500:]}")


def case_slurm(cluster, mpiexec, bin_dir):
    import slurm_cluster
    if not slurm_cluster.available():
        print("skipped: Slurm is not installed (scripts/install_deps.sh --test installs it)")
        sys.exit(77)
    with slurm_cluster.Slurm(cluster) as slurm, tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "comm.json")
        r = slurm.run(["srun", "-N2", "--ntasks-per-node=2", os.path.join(bin_dir, "run_benchmark"),
                       "--comm", "--maxbytes", "64K", "--stepfactor", "16", "-o", report])
        if r.returncode != 0:
            fail(f"srun run_benchmark --comm: exit {r.returncode}: {r.stderr[-1500:]}\n"
                 f"{slurm.logs()}")
        comm = json.load(open(report))
        if (comm["ranks"], comm["nodes"]) != (4, 2) or any(x["wrong"] for x in comm["results"]):
            fail(f"srun --comm report: {json.dumps(comm)[:1000]}")
        print(f"srun: run_benchmark --comm on {comm['ranks']} ranks, {comm['nodes']} nodes")
        tool = os.path.join(bin_dir, "run_closed")
        args = ["--bench", "dlrm_dcnv2", "--runs", "1", "--seed", "21"]
        script = os.path.join(tmp, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
                    f"#SBATCH --output={tmp}/slurm-%j.out\n"
                    f'srun {tool} --nodes "$SLURM_JOB_NUM_NODES" {" ".join(args)} '
                    f"--out {tmp}/across\n")
        r = slurm.run(["sbatch", "--wait", script])
        out = "".join(open(f).read() for f in glob.glob(os.path.join(tmp, "slurm-*.out")))
        if r.returncode != 0:
            fail(f"sbatch --wait: exit {r.returncode}: {r.stderr[-500:]} {out[-1500:]}\n"
                 f"{slurm.logs()}")
        n = equal_to_one_node(os.path.join(tmp, "across"), tool, args, mpiexec,
                              f"; the job said {out[-1500:]}")
        print(f"sbatch: {n} events equal to 4 ranks on one node apart from times")


def main():
    case, mpiexec, bin_dir = sys.argv[1:4]
    if os.geteuid() != 0:
        print("skipped: network namespaces need root")
        return 77
    nodes, slots = (3, 1) if case == "preflight" else (2, 2)
    with Cluster(nodes=nodes, slots=slots) as cluster:
        {"ranks": case_ranks, "run_closed": case_run_closed, "nodes": case_nodes,
         "lost_rank": case_lost_rank, "rendezvous": case_rendezvous,
         "preflight": case_preflight, "silent_link": case_silent_link,
         "silent_link_benchmark": case_silent_link_benchmark,
         "weak_scaling": case_weak_scaling, "slurm": case_slurm}[case](cluster, mpiexec, bin_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
