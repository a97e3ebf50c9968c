#!/usr/bin/env python3
"""What a program links from an archive, in bytes, read from the GNU ld map of its link
(-Wl,-Map=FILE): the code, read-only data, unwind tables and data of each archive member the
linker pulled in (not .bss, which takes no bytes in the file, nor debug sections).

usage: linked_size.py MAP ARCHIVE_NAME [--max BYTES]
Prints one line per member and the total; with --max, exits 1 when the total is above it.
"""
import re
import sys

COUNTED = ('.text', '.rodata', '.eh_frame', '.gcc_except_table', '.data', '.init_array', '.fini_array', '.tdata')
ENTRY = re.compile(r'^ (\S+)?\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)$')


def member_sizes(map_text, archive):
    """{member: bytes} over the map's memory map (the discarded sections listed before it skipped)."""
    start = map_text.find('Linker script and memory map')
    sizes, section = {}, None
    for line in map_text[start:].splitlines():
        if line.startswith(' .') and len(line.split()) == 1:  # a long section name: its numbers follow
            section = line.split()[0]
            continue
        m = ENTRY.match(line)
        if not m:
            section = None
            continue
        name = m.group(1) or section
        section = None
        where = m.group(3)
        if not name or not name.startswith(COUNTED) or f'{archive}(' not in where:
            continue
        member = where[where.index(f'{archive}(') + len(archive) + 1:-1]
        sizes[member] = sizes.get(member, 0) + int(m.group(2), 16)
    return sizes


def main():
    args = sys.argv[1:]
    limit = None
    if '--max' in args:
        i = args.index('--max')
        limit = int(args[i + 1])
        del args[i:i + 2]
    map_path, archive = args
    sizes = member_sizes(open(map_path).read(), archive)
    total = sum(sizes.values())
    for member, n in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f'{n:>9,}  {member}')
    print(f'{total:>9,}  linked from {archive} ({len(sizes)} members)')
    if limit is not None and total > limit:
        print(f'more than {limit:,} bytes')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
