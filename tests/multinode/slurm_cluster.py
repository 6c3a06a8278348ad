"""Slurm from Debian's packages on namespace nodes (netns_cluster.py):
slurmctld on node 0, one slurmd per node in its namespace with its host
name, no munge (auth/none and cred/none: the daemons trust each other on a
private bridge), cgroup v1 as the machine mounts it, PMIx as the default
MPI (Open MPI's ranks start directly under srun). Each slurmd gets its own configuration file that differs only
in TmpFS (the nodes share one /tmp, where Slurm's PMIx keeps per-step
folders of the same name).

    with Cluster(nodes=2, slots=2) as c, Slurm(c) as slurm:
        slurm.run(["srun", "-N2", "--ntasks-per-node=2", "hostname"])
"""
import os
import shutil
import subprocess
import tempfile
import time


def available():
    return all(shutil.which(t) for t in ("slurmctld", "slurmd", "srun", "sbatch", "sinfo"))


class Slurm:
    def __init__(self, cluster):
        self.cluster = cluster
        self.procs = []

    def __enter__(self):
        c = self.cluster
        self.dir = tempfile.mkdtemp(prefix="slurm-")
        d = self.dir
        os.makedirs(os.path.join(d, "state"))
        nodes = "".join(f"NodeName={n} NodeAddr={a} CPUs={c.slots} State=UNKNOWN\n"
                        for n, a in zip(c.names, c.addresses))
        base = (f"ClusterName=mlperf\nSlurmctldHost={c.names[0]}({c.addresses[0]})\n"
                "AuthType=auth/none\nCredType=cred/none\nSlurmUser=root\nSlurmdUser=root\n"
                f"StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool-%n\n"
                f"SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd-%n.pid\n"
                f"SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd-%n.log\n"
                "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                "JobAcctGatherType=jobacct_gather/none\nSelectType=select/cons_tres\n"
                "SelectTypeParameters=CR_CPU\nMpiDefault=pmix\nReturnToService=2\n"
                "DebugFlags=NO_CONF_HASH\n" + nodes +
                f"PartitionName=all Nodes={','.join(c.names)} Default=YES MaxTime=INFINITE "
                "State=UP OverSubscribe=FORCE\n")
        self.conf = os.path.join(d, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(base)
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\n")
        self.env = dict(os.environ, SLURM_CONF=self.conf,
                        # Open MPI in the ranks: TCP on the bridge between nodes, shared
                        # memory within one (under srun, Debian's Open MPI 4.1 crashed
                        # in MPI_Init about one start in ten on a loaded machine when
                        # two ranks of a node wired up over TCP: a null call inside
                        # mca_btl_tcp.so, from a core dump; none in 25 starts with
                        # vader); yield while waiting (the nodes share the cores).
                        OMPI_MCA_btl="vader,tcp,self",
                        OMPI_MCA_btl_vader_single_copy_mechanism="none",
                        OMPI_MCA_btl_tcp_if_include="10.77.0.0/24",
                        OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1")
        try:
            self._start(base)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, base):
        c, d = self.cluster, self.dir
        log = open(os.path.join(d, "daemons.err"), "w")
        self.procs.append(subprocess.Popen(c.on_node(0, ["slurmctld", "-D", "-f", self.conf]),
                                           env=self.env, stdout=log, stderr=log))
        for i, name in enumerate(c.names):
            os.makedirs(os.path.join(d, f"spool-{name}"))
            os.makedirs(os.path.join(d, f"tmp-{name}"))
            conf = os.path.join(d, f"slurm-{name}.conf")
            with open(conf, "w") as f:
                f.write(base + f"TmpFS={d}/tmp-{name}\n")
            self.procs.append(subprocess.Popen(c.on_node(i, ["slurmd", "-D", "-f", conf, "-N", name]),
                                               env=self.env, stdout=log, stderr=log))
        started = time.time()
        while True:
            r = self.run(["sinfo", "-h", "-o", "%T %D"], timeout=20)
            if r.stdout.split() == ["idle", str(c.nodes)]:
                break
            if time.time() - started > 60:
                raise RuntimeError(f"the Slurm nodes never became idle: {r.stdout} {r.stderr}\n"
                                   f"{self.logs()}")
            time.sleep(0.5)
        # Ready when a trivial step runs on every node (a node can show idle
        # before its slurmd takes steps).
        for attempt in range(3):
            r = self.run(["srun", f"-N{c.nodes}", "--ntasks-per-node=1", "--mpi=none", "true"],
                         timeout=60)
            if r.returncode == 0:
                return
            print(f"slurm: trivial step {attempt + 1} failed: {r.stderr.strip()[-300:]}")
            time.sleep(2)
        raise RuntimeError(f"a trivial srun step failed 3 times: {r.stderr[-1000:]}\n{self.logs()}")

    def logs(self, tail=1500):
        """The end of every daemon's log, for a failure's message."""
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith((".log", ".err")):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    out.append(f"--- {name}\n{f.read()[-tail:]}")
        return "\n".join(out)

    def run(self, argv, timeout=240, node=0):
        """argv on node `node` (srun, sbatch, ...), with this cluster's configuration."""
        return subprocess.run(self.cluster.on_node(node, argv), env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
