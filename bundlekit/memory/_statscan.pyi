# The C listing of a memory tree (bundlekit/memory/_statscan.c has the contract).
def scan(
    dir_fd: int, /
) -> tuple[bytes, bytes, int, tuple[int, int, int] | None, list[str], str | None] | None: ...
