"""What a tree holds, entry by entry: the probe server puts a tree back by it, and the schema plugin
(swedeck_schema) tells by it whether a probe's run left the tree as it found it. Standard library only."""

import os


def snapshot(root, skip=()):
    """path -> (is_dir, mode, size, mtime_ns) of every entry under root (links not followed), but those
    at the paths in ``skip`` (relative to root) and under them: one lstat per entry, the kinds from
    the folder listing itself."""
    out = {}
    folders = [""]
    while folders:
        rel = folders.pop()
        with os.scandir(os.path.join(root, rel) if rel else root) as entries:
            for entry in entries:
                path = os.path.join(rel, entry.name) if rel else entry.name
                if path in skip:
                    continue
                st = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
                out[path] = (is_dir, st.st_mode, 0 if is_dir else st.st_size, 0 if is_dir else st.st_mtime_ns)
                if is_dir:
                    folders.append(path)
    return out
