"""A real OpenLDAP server (Debian's slapd) on a free loopback port, with a test directory loaded from an LDIF.

Its configuration and database live under the test's temporary folder; it runs in the foreground as a child of the
test process and is stopped (SIGTERM, then SIGKILL) when the test ends, and it exits with its parent's pipe anyway."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

SUFFIX = "dc=uni,dc=example"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "directory-admin"  # noqa: S105
SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


def _slapd() -> str:
    found = shutil.which("slapd") or ("/usr/sbin/slapd" if Path("/usr/sbin/slapd").exists() else None)
    if not found:
        raise RuntimeError("slapd is missing: scripts/test.sh installs Debian's slapd and ldap-utils")
    return found


def _slapadd() -> str:
    return shutil.which("slapadd") or "/usr/sbin/slapadd"


class Slapd:
    def __init__(self, folder: Path, ldif: Path):
        self.folder = folder
        (folder / "db").mkdir(parents=True)
        schema = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS)
        self.config = folder / "slapd.conf"
        self.config.write_text(
            f"""{schema}
pidfile {folder}/slapd.pid
argsfile {folder}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 10485760
suffix "{SUFFIX}"
rootdn "{ADMIN_DN}"
rootpw {ADMIN_PASSWORD}
directory {folder}/db
index objectClass eq
index uid eq
index member eq
"""
        )
        subprocess.run([_slapadd(), "-f", str(self.config), "-l", str(ldif)], check=True, capture_output=True)  # noqa: S603
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.uri = f"ldap://127.0.0.1:{self.port}"
        self.log = open(folder / "slapd.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(  # noqa: S603
            [_slapd(), "-f", str(self.config), "-h", self.uri + "/", "-d", "0"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                self.connect().unbind_s()
                break
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"slapd did not start: {(folder / 'slapd.log').read_text()[-2000:]}") from None
                time.sleep(0.1)

    def connect(self):
        import ldap

        connection = ldap.initialize(self.uri)
        connection.set_option(ldap.OPT_NETWORK_TIMEOUT, 5)
        connection.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        return connection

    def remove_member(self, group_cn: str, member_dn: str) -> None:
        import ldap

        connection = self.connect()
        try:
            connection.modify_s(
                f"cn={group_cn},ou=groups,{SUFFIX}", [(ldap.MOD_DELETE, "member", [member_dn.encode()])]
            )
        finally:
            connection.unbind_s()

    def add_member(self, group_cn: str, member_dn: str) -> None:
        import ldap

        connection = self.connect()
        try:
            connection.modify_s(f"cn={group_cn},ou=groups,{SUFFIX}", [(ldap.MOD_ADD, "member", [member_dn.encode()])])
        finally:
            connection.unbind_s()

    def delete(self, dn: str) -> None:
        connection = self.connect()
        try:
            connection.delete_s(dn)
        finally:
            connection.unbind_s()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
