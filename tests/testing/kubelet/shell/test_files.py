"""File builtins over a container filesystem: cat cp mv rm mkdir chmod touch ls stat tee."""

from __future__ import annotations

from etctl.testing._kubelet.shell import Shell
from etctl.testing._kubelet.vfs import ContainerFS


def test_cat_and_tee(shell: Shell) -> None:
    assert shell.run("echo x | tee /tmp/a /tmp/b; cat /tmp/a - /tmp/b", stdin=b"").output == (
        "x\nx\nx\n"
    )
    failed = shell.run("cat /nope /tmp")
    assert failed.exit_code == 1
    assert failed.errors == (
        "cat: can't open '/nope': No such file or directory\ncat: read error: Is a directory\n"
    )


def test_cp_copies_files_and_trees(shell: Shell, fs: ContainerFS) -> None:
    result = shell.run(
        "mkdir -p /data/in/sub && echo a > /data/in/sub/f && cp -r /data/in /data/out && "
        "cp /etc/config/hostfile /tmp/ && cp /tmp/hostfile /tmp/copy && cat /data/out/sub/f"
    )
    assert result.output == "a\n"
    stat = fs.stat("/tmp/hostfile")
    assert stat is not None
    assert stat.mode == 0o444
    assert shell.run("cp /data/in /tmp/x").errors == "cp: omitting directory '/data/in'\n"
    assert shell.run("cp /nope /tmp/x").errors == (
        "cp: can't stat '/nope': No such file or directory\n"
    )
    assert shell.run("cp /tmp/copy").errors == "cp: missing destination\n"


def test_mv_and_rm(shell: Shell) -> None:
    shell.run("echo a > /tmp/a; mkdir /tmp/d; mv /tmp/a /tmp/d; mv /tmp/d /tmp/e")
    assert shell.run("cat /tmp/e/a").output == "a\n"
    assert shell.run("rm /tmp/e").errors == "rm: '/tmp/e' is a directory\n"
    assert shell.run("rm -r /tmp/e && ls /tmp").output == ""
    assert shell.run("rm /tmp/none").errors == (
        "rm: can't remove '/tmp/none': No such file or directory\n"
    )
    assert shell.run("rm -f /tmp/none").exit_code == 0
    assert shell.run("rm /etc/config/hostfile").errors == (
        "rm: can't remove '/etc/config/hostfile': Read-only file system\n"
    )
    assert shell.run("rm -r /etc/config").exit_code == 1


def test_mkdir(shell: Shell) -> None:
    assert shell.run("mkdir /a/b").errors == (
        "mkdir: can't create directory '/a/b': No such file or directory\n"
    )
    assert shell.run("mkdir -p /a/b/c && mkdir -m 700 /a/x && stat -c %a /a/x").output == "700\n"
    assert shell.run("mkdir /a").errors == "mkdir: can't create directory '/a': File exists\n"


def test_chmod_records_modes_shown_by_ls_and_stat(shell: Shell) -> None:
    shell.run("touch /tmp/run.sh; chmod 750 /tmp/run.sh; chmod o+r,g-x /tmp/run.sh")
    assert shell.run("stat -c '%a %A %F %s %U' /tmp/run.sh").output == (
        "744 -rwxr--r-- regular empty file 0 root\n"
    )
    assert shell.run("ls -l /tmp").output == (
        "-rwxr--r--    1 root     root             0 Jan  1 12:30 run.sh\n"
    )
    assert shell.run("chmod 644 /etc/config/hostfile").errors == (
        "chmod: /etc/config/hostfile: Read-only file system\n"
    )
    assert shell.run("chmod q+z /tmp/run.sh").errors == "chmod: invalid mode 'q+z'\n"


def test_touch_and_dev_null(shell: Shell) -> None:
    assert shell.run("touch /tmp/t && test -f /tmp/t && echo made").output == "made\n"
    assert shell.run("touch -c /tmp/none; test -e /tmp/none || echo absent").output == "absent\n"
    assert shell.run("cat /dev/null; echo x > /dev/null; test -c /dev/null && echo dev").output == (
        "dev\n"
    )
