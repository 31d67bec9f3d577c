#!/usr/bin/env python3
"""Reads `perf script -F comm,trace,ip,sym --no-demangle --show-mmap-events` of a run recorded
with the `probe_libswiftCore:retain_isa` probe (Scripts/count-per-request.sh --by-type) and prints
one line per (type of the object retained, innermost Courier frame): "count type<TAB>frame".

The probe reads the object's metadata pointer and, at offset 40 of a class's metadata on a
platform without Objective-C interop, its nominal type descriptor. The metadata pointer names a
non-generic class (its metadata is a symbol of the executable or a library); a generic class's
metadata is made at run time, so it is named by its descriptor instead (`generic ...`, without
its arguments). Heap boxes and closure contexts are named by their metadata (a runtime symbol) or
by its address. Symbols are read with `nm` from the mapped files; the caller demangles.
"""
import bisect
import collections
import re
import subprocess
import sys

MMAP = re.compile(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|\d+) [^\]]*\]: \S+ (/\S+)")
symbol_tables = {}


def symbols(path):
    """Addresses and names of `path`'s defined symbols, sorted (the dynamic table if stripped)."""
    if path not in symbol_tables:
        addresses, names = [], []
        for dynamic in ([], ["-D"]):
            listing = subprocess.run(["nm", "-n", "--defined-only", *dynamic, path], capture_output=True, text=True).stdout
            for line in listing.splitlines():
                fields = line.split()
                if len(fields) >= 3:
                    addresses.append(int(fields[0], 16))
                    names.append(fields[2])
            if addresses:
                break
        symbol_tables[path] = (addresses, names)
    return symbol_tables[path]


def main():
    maps = []  # (start, end, path, load base)
    pairs = collections.Counter()
    current, frame, first, depth, skip = None, None, None, 0, True

    def flush():
        if current is not None and not skip:
            pairs[(current, frame or ("other:" + (first or "?")))] += 1

    for line in sys.stdin:
        if "PERF_RECORD_MMAP" in line:
            match = MMAP.search(line)
            if match:
                start, length = int(match.group(1), 16), int(match.group(2), 16)
                offset, path = int(match.group(3), 0), match.group(4)
                # Position-independent files map their first segment (offset 0) at their base.
                maps.append((start, start + length, path, start - offset))
            continue
        if line and not line[0].isspace():
            flush()
            fields = line.split()
            skip = not fields or fields[0] == "nginx"
            isa = descriptor = None
            for field in fields:
                if field.startswith("isa="):
                    isa = int(field[4:], 0)
                elif field.startswith("desc="):
                    descriptor = int(field[5:], 0)
            current = (isa, descriptor) if isa is not None else None
            frame, first, depth = None, None, 0
            continue
        fields = line.split()
        if len(fields) >= 2:
            depth += 1
            if depth == 2:
                first = fields[1]
            if frame is None and depth >= 2 and "7Courier" in fields[1]:
                frame = fields[1]
    flush()

    bases = {}
    for start, _, path, base in maps:
        bases[path] = min(bases.get(path, base), base)

    def name(address):
        if address is None:
            return None
        for start, end, path, _ in maps:
            if start <= address < end:
                addresses, names = symbols(path)
                index = bisect.bisect_right(addresses, address - bases[path]) - 1
                return names[index] if index >= 0 else None
        return None

    labels = {}
    for (isa, descriptor), _ in pairs:
        if (isa, descriptor) in labels:
            continue
        metadata = name(isa)
        if metadata and (metadata.endswith("Mf") or metadata.endswith("N")):
            labels[(isa, descriptor)] = metadata
            continue
        nominal = name(descriptor)
        if nominal and nominal.endswith("Mn"):
            labels[(isa, descriptor)] = "generic " + nominal
        else:
            labels[(isa, descriptor)] = metadata or hex(isa)
    merged = collections.Counter()
    for ((isa, descriptor), frame), count in pairs.items():
        merged[(labels[(isa, descriptor)], frame)] += count
    for (label, frame), count in merged.items():
        print(f"{count} {label}\t{frame}")


if __name__ == "__main__":
    main()
