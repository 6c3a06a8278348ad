"""A throw-away PostgreSQL cluster for tests: Debian's server binaries, a
data folder and a Unix socket in a temporary folder, no TCP, stopped and
removed on exit. As root (CI), the server runs as the 'postgres' user, which
Debian's package makes; PostgreSQL refuses to run as root."""

import glob
import os
import pwd
import shutil
import subprocess


def find_postgres():
    """The newest /usr/lib/postgresql/<v>/bin holding initdb, or None."""
    found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'),
                   key=lambda p: int(p.split('/')[4]) if p.split('/')[4].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


class Postgres:
    def __init__(self, bin_dir, folder, database='warehouse'):
        self.bin, self.folder, self.database = bin_dir, folder, database
        self.data = os.path.join(folder, 'data')
        self.uri = f'postgresql://postgres@/{database}?host={folder}'

    def _as_owner(self, *cmd):
        argv = [os.path.join(self.bin, cmd[0]), *cmd[1:]]
        if os.geteuid() == 0:
            argv = ['runuser', '-u', 'postgres', '--', *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def __enter__(self):
        os.makedirs(self.folder, exist_ok=True)
        if os.geteuid() == 0:
            pw = pwd.getpwnam('postgres')
            os.chown(self.folder, pw.pw_uid, pw.pw_gid)
            # The folders above must let the server reach its socket.
            parent = os.path.dirname(self.folder)
            os.chmod(parent, 0o755)
        self._as_owner('initdb', '-D', self.data, '-A', 'trust', '-U', 'postgres',
                       '--locale=C', '-E', 'UTF8')
        self._as_owner('pg_ctl', '-D', self.data, '-l', os.path.join(self.folder, 'server.log'), '-w',
                       '-o', f"-k {self.folder} -c listen_addresses='' -c fsync=off", 'start')
        self._as_owner('createdb', '-h', self.folder, '-U', 'postgres', self.database)
        return self

    def __exit__(self, *exc):
        try:
            self._as_owner('pg_ctl', '-D', self.data, '-m', 'immediate', '-w', 'stop')
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
        return False
