"""Several "nodes" on one machine for the multi-node tests: each a Linux
network namespace with its own loopback, address and host name, joined by
veth pairs to a bridge in a switch namespace of its own (nothing touches the
machine's own network). Open MPI launches across them through a launch
agent that enters a node's namespaces, as ssh would enter the node; the
ranks talk TCP over the veth links only (no shared memory between nodes).

    with Cluster(nodes=2, slots=2) as c:
        c.mpirun(4, ["hostname"])

Needs root (CI runs as root). Namespaces are named after the process id, so
tests may run side by side; those of processes that no longer exist are
removed first, and a cluster's own on exit.
"""
import json
import os
import signal
import re
import subprocess
import tempfile

SUBNET = "10.77.0.0/24"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def _remove_stale():
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for line in listed:
        m = re.match(r"^(mlp(\d+)(?:sw|n\d+))\b", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            _ip("netns", "del", m.group(1), check=False)


class Cluster:
    def __init__(self, nodes=2, slots=2):
        self.nodes, self.slots = nodes, slots
        self.prefix = f"mlp{os.getpid()}"
        self.switch = self.prefix + "sw"
        self.names = [f"node{i}" for i in range(nodes)]
        self.spaces = [f"{self.prefix}n{i}" for i in range(nodes)]
        self.addresses = [f"10.77.0.{i + 1}" for i in range(nodes)]
        self.created = []

    def __enter__(self):
        _remove_stale()
        self._tmp = tempfile.TemporaryDirectory()
        try:
            self._create()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in reversed(self.created):
            # A daemon cut off from mpirun outlives its namespace otherwise.
            for pid in _ip("netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            _ip("netns", "del", ns, check=False)
        self.created = []
        self._tmp.cleanup()

    def _create(self):
        _ip("netns", "add", self.switch)
        self.created.append(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i, ns in enumerate(self.spaces):
            _ip("netns", "add", ns)
            self.created.append(ns)
            # Interface names are per namespace once moved; made in the switch.
            _ip("-n", self.switch, "link", "add", f"s{i}", "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _ip("-n", self.switch, "link", "set", f"s{i}", "master", "br0")
            _ip("-n", self.switch, "link", "set", f"s{i}", "up")
            _ip("-n", ns, "addr", "add", f"{self.addresses[i]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            # Data unacknowledged by a silent node is given up after about
            # 13 s, not the kernel's default 15 minutes (docs/cluster.md).
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_retries2=5"],
                           check=True, capture_output=True)
        self.hostfile = os.path.join(self._tmp.name, "hostfile")
        with open(self.hostfile, "w") as f:
            for a in self.addresses:
                f.write(f"{a} slots={self.slots}\n")
        self.agent = os.path.join(self._tmp.name, "agent.sh")
        cases = "".join(f"  {a}) ns={ns}; name={n} ;;\n"
                        for a, ns, n in zip(self.addresses, self.spaces, self.names))
        with open(self.agent, "w") as f:
            f.write("#!/bin/sh\n"
                    "# agent.sh HOST COMMAND: COMMAND (one string, as ssh gets it) on HOST.\n"
                    f'case "$1" in\n{cases}  *) echo "agent: unknown host $1" >&2; exit 1 ;;\n'
                    "esac\nshift\n"
                    'exec ip netns exec "$ns" unshare --uts sh -c \'hostname "$1"; shift; '
                    'eval "$*"\' sh "$name" "$@"\n')
        os.chmod(self.agent, 0o755)

    def silence(self, i):
        """Node i's link goes down without a word: the other nodes keep its
        hardware address pinned, so their packets go out and are dropped
        (no refusal, no unreachable), as behind a dead switch port."""
        link = json.loads(_ip("-j", "-n", self.spaces[i], "link", "show", "eth0").stdout)
        mac = link[0]["address"]
        for j, ns in enumerate(self.spaces):
            if j != i:
                _ip("-n", ns, "neigh", "replace", self.addresses[i], "lladdr", mac, "dev", "eth0",
                    "nud", "permanent")
        _ip("-n", self.spaces[i], "link", "set", "eth0", "down")

    def throttle(self, i, rate):
        """Node i's cable limited to `rate` (tc's units, e.g. 200mbit) each
        way: a token bucket on both of its ends, as a bad port or NIC."""
        for ns, dev in ((self.spaces[i], "eth0"), (self.switch, f"s{i}")):
            subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root",
                            "tbf", "rate", rate, "burst", "256kbit", "latency", "100ms"],
                           check=True, capture_output=True, text=True)

    def running(self, i, name):
        """Pids of the processes called `name` in node i's namespace."""
        found = []
        for pid in _ip("netns", "pids", self.spaces[i], check=False).stdout.split():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == name:
                        found.append(int(pid))
            except OSError:
                pass
        return found

    def on_node(self, i, argv):
        """argv run inside node i's namespaces, with its host name."""
        return ["ip", "netns", "exec", self.spaces[i], "unshare", "--uts", "sh", "-c",
                'hostname "$1"; shift; exec "$@"', "sh", self.names[i], *argv]

    def mpirun_argv(self, np, argv, mpiexec="mpirun"):
        """mpirun from node 0 over every node, `slots` ranks on each in order."""
        return self.on_node(0, [
            mpiexec, "--allow-run-as-root", "--hostfile", self.hostfile, "-np", str(np),
            "--mca", "plm_rsh_agent", self.agent, "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", SUBNET, "--mca", "oob_tcp_if_include", SUBNET,
            "--mca", "rtc_hwloc_vmhole", "none", "--mca", "mpi_yield_when_idle", "1",
            # A daemon behind a silent link is given up after about 11 s, not
            # Open MPI's default 8 minutes (docs/cluster.md).
            "--mca", "oob_tcp_keepalive_time", "5", "--mca", "oob_tcp_keepalive_intvl", "2",
            "--mca", "oob_tcp_keepalive_probes", "3",
            "-x", "OMP_NUM_THREADS=1", *argv])

    def mpirun(self, np, argv, mpiexec="mpirun", timeout=240):
        return subprocess.run(self.mpirun_argv(np, argv, mpiexec), capture_output=True, text=True,
                              timeout=timeout)
