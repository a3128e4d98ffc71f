#!/usr/bin/env python3
"""funclen.py SRCROOT [LIMIT]: fails when a function of product code is
longer than LIMIT lines (default 150).

Product code: every .c, .h, .y and .l file under SRCROOT except tests/,
bench/, hidden folders, nested source trees (their own project()) and
build trees (folders holding meson-private/ or build.ninja). In .y and .l files only the C parts count: the %{ ... %}
blocks and the code after the second %%. A function's length runs from the
first line of its declaration to its closing brace, both included.

Allowed: the emulator's two dispatch loops (ALLOWED below), the one place
where one big switch reads best. The scan is a small C lexer: comments,
string and character literals and preprocessor lines are blanked before
braces are counted; a file whose braces do not balance fails the test.
"""
import os
import re
import sys

ALLOWED = {
    ('runtime/emu/vector.c', 'emu_vector_exec'),
    ('runtime/emu/emu.c', 'emu_advance'),
}
SKIP_TOP = {'tests', 'bench', 'subprojects'}


def strip_c(text):
    """text with comments, literals and preprocessor lines replaced by
    spaces; newlines are kept so line numbers stay."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in ' \t':
            out.append(c)
            i += 1
            continue
        if line_start and c == '#':  # a directive, with its continuations
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                if text.startswith('/*', i):  # a comment may span lines
                    j = text.find('*/', i + 2)
                    j = n if j < 0 else j + 2
                    out.append(re.sub(r'[^\n]', ' ', text[i:j]))
                    i = j
                    continue
                out.append(' ')
                i += 1
            continue
        line_start = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            if c == '\n':
                line_start = True
            out.append(c)
            i += 1
    return ''.join(out)


def c_parts(text, path):
    """For a .y or .l file, the text with everything but its C code blanked."""
    if not path.endswith(('.y', '.l')):
        return text
    lines = text.split('\n')
    keep = []
    section, in_block = 0, False
    for ln in lines:
        s = ln.strip()
        if not in_block and s == '%%':
            section += 1
            keep.append('')
            continue
        if s == '%{':
            in_block = True
            keep.append('')
            continue
        if s == '%}':
            in_block = False
            keep.append('')
            continue
        keep.append(ln if in_block or section >= 2 else '')
    return '\n'.join(keep)


def functions(text):
    """(name, first line, last line) of each function definition: a
    top-level brace whose declaration has a parameter list and is not a
    struct, union, enum or initializer. Raises ValueError when braces do
    not balance."""
    res = []
    depth = 0
    line = 1
    body = None        # (name, first line) of the function being read
    i, n = 0, len(text)
    last_end = 0  # where the current top-level declaration began
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
        elif c == '{':
            if depth == 0:
                decl = text[last_end:i]
                m = re.search(r'([A-Za-z_]\w*)\s*\(', decl)
                head = decl.split('(')[0]
                if (m and ')' in decl and '=' not in head and
                        not re.search(r'\b(struct|union|enum|typedef)\b', head)):
                    k = len(decl) - len(decl.lstrip())
                    first = line - decl[k:].count('\n')
                    body = (m.group(1), first)
                else:
                    body = None
            depth += 1
        elif c == '}':
            depth -= 1
            if depth < 0:
                raise ValueError('unbalanced } at line %d' % line)
            if depth == 0:
                if body:
                    res.append((body[0], body[1], line))
                body = None
                last_end = i + 1
        elif c == ';' and depth == 0:
            last_end = i + 1
        i += 1
    if depth != 0:
        raise ValueError('%d unclosed { at the end' % depth)
    return res


def is_project(path):
    """Whether the meson.build at path starts a project of its own."""
    try:
        with open(path, errors='replace') as f:
            return any(line.lstrip().startswith('project(') for line in f)
    except OSError:
        return False


def product_files(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        top = rel.split(os.sep)[0]
        if rel != '.' and (top in SKIP_TOP or top.startswith('.')):
            dirs[:] = []
            continue
        if 'meson-private' in dirs or 'build.ninja' in files or \
                (rel != '.' and 'meson.build' in files and is_project(os.path.join(d, 'meson.build'))):
            dirs[:] = []  # a build tree, or another source tree (its own project())
            continue
        dirs[:] = sorted(x for x in dirs if not x.startswith('.'))
        for f in sorted(files):
            if f.endswith(('.c', '.h', '.y', '.l')):
                yield os.path.join(d, f)


def main():
    if len(sys.argv) < 2:
        print('usage: funclen.py SRCROOT [LIMIT]', file=sys.stderr)
        return 2
    root = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 150
    bad = 0
    nfiles = nfuncs = 0
    for p in product_files(root):
        rel = os.path.relpath(p, root).replace(os.sep, '/')
        with open(p, encoding='utf-8', errors='replace') as f:
            text = f.read()
        try:
            fns = functions(strip_c(c_parts(text, rel)))
        except ValueError as e:
            print('%s: cannot scan: %s' % (rel, e))
            bad += 1
            continue
        nfiles += 1
        for name, first, last in fns:
            nfuncs += 1
            n = last - first + 1
            if n > limit and (rel, name) not in ALLOWED:
                print('%s:%d: %s is %d lines (at most %d)' % (rel, first, name, n, limit))
                bad += 1
    print('%d functions in %d files scanned' % (nfuncs, nfiles))
    if nfiles == 0 or nfuncs == 0:
        print('nothing scanned under %s' % root)
        return 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
