#!/usr/bin/env python3
"""run_examples.py: runs the command examples of README.md and docs/*.md
and compares what they print with what the docs show.

Convention (also stated in docs/index.md):
- A command is a line whose text, after its indentation, starts with "$ "
  (in an indented or fenced code block). It continues on the next lines
  while it ends in a backslash or bash finds it incomplete (an open quote,
  a for loop).
- The lines after it, up to the next "$ " line, a line indented less
  than the "$", or the end of the block, are its expected output (blank
  lines inside it included; a blank line right after the command ends
  it): stdout and stderr together, trailing spaces ignored. A line that
  is exactly "..." (after the indentation) stands for any number of lines;
  "..." inside a line stands for any text. An exit status is shown only by
  the example itself ('; echo "exit $?"').
- Commands run with bash from the source root, one shell per doc file in
  the order written (variables and files carry over). "tpucc" on PATH is
  the binary under test, and so is "build/tools/tpucc" (the README's
  spelling); "python3" is one that has numpy. "/tmp/t" is a scratch
  directory made fresh for each doc file.
- An indented block starting "HloModule NAME" shows the module the
  examples run as tests/docs/files/NAME.hlo, and must equal that file.
- An HTML comment line "<!-- doc-test: skip REASON -->" leaves the
  commands of the next code block unrun (an install, a C compiler).

usage: run_examples.py TPUCC SOURCE_ROOT [DOC...]
(no DOC: README.md and docs/*.md). Exit 1 when an example differs.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

MARK = '@@doc-example-%d@@'


def incomplete(text):
    if text.rstrip().endswith('\\'):
        return True
    r = subprocess.run(['bash', '-n'], input=text + '\n', capture_output=True, text=True)
    return r.returncode != 0 and ('unexpected end of file' in r.stderr or
                                  'unexpected EOF' in r.stderr)


def indent_of(line):
    return len(line) - len(line.lstrip(' '))


def extract(path):
    """[(line number, command text, [expected lines])] of one doc."""
    lines = open(path, encoding='utf-8').read().split('\n')
    examples = []
    skip_block = False
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if 'doc-test: skip' in line:
            skip_block = True
            i += 1
            continue
        if stripped.startswith('```'):
            in_fence = not in_fence
            if not in_fence:
                skip_block = False
            i += 1
            continue
        if stripped and indent_of(line) < 4 and not in_fence:
            skip_block = False
        if not stripped.startswith('$ '):
            i += 1
            continue
        ind = indent_of(line)
        start = i + 1
        cmd = [line[ind + 2:]]
        i += 1
        while i < len(lines) and incomplete('\n'.join(cmd)):
            cmd.append(lines[i][ind:] if indent_of(lines[i]) >= ind else lines[i].lstrip())
            i += 1
        expected = []
        while i < len(lines):
            l = lines[i]
            if not l.strip():
                # A blank line inside output: kept when output came before
                # it and the block goes on with more of it.
                j = i
                while j < len(lines) and not lines[j].strip():
                    j += 1
                if (not expected or j == len(lines) or indent_of(lines[j]) < ind
                        or lines[j][ind:].startswith('$ ')):
                    break
                expected.extend([''] * (j - i))
                i = j
                continue
            if indent_of(l) < ind or l.strip().startswith('```') or l[ind:].startswith('$ '):
                break
            expected.append(l[ind:].rstrip())
            i += 1
        if not skip_block:
            examples.append((start, '\n'.join(cmd), expected))
    return examples


def listing_problems(path, root):
    """An indented block "HloModule NAME ..." in a doc shows
    tests/docs/files/NAME.hlo, which the examples run: the two must agree."""
    lines = open(path, encoding='utf-8').read().split('\n')
    problems = []
    for i, line in enumerate(lines):
        m = re.match(r'^( {4,})HloModule (\w+)', line)
        f = m and os.path.join(root, 'tests', 'docs', 'files', m.group(2) + '.hlo')
        if not f or not os.path.exists(f):
            continue
        ind = len(m.group(1))
        shown = []
        j = i
        while j < len(lines) and lines[j].strip() and indent_of(lines[j]) >= ind:
            shown.append(lines[j][ind:].rstrip())
            j += 1
        if shown != open(f, encoding='utf-8').read().rstrip('\n').split('\n'):
            problems.append('%s:%d: the module shown differs from %s\n' % (
                os.path.relpath(path, root), i + 1, os.path.relpath(f, root)))
    return problems


def matches(expected, got):
    """expected lines (with "..." wildcards) against got lines."""
    def line_ok(e, g):
        if '...' not in e:
            return e == g
        pat = '.*'.join(re.escape(p) for p in e.split('...'))
        return re.fullmatch(pat, g) is not None

    memo = {}

    def m(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            r = j == len(got)
        elif expected[i].strip() == '...':
            r = m(i + 1, j) or (j < len(got) and m(i, j + 1))
        else:
            r = j < len(got) and line_ok(expected[i], got[j]) and m(i + 1, j + 1)
        memo[(i, j)] = r
        return r
    return m(0, 0)


def run_doc(bindir, root, path):
    """Runs the examples of path; returns (number run, [failure texts])."""
    examples = extract(path)
    if not examples:
        return 0, []
    rel = os.path.relpath(path, root)
    with tempfile.TemporaryDirectory(prefix='tpucc-doc-') as scratch:
        script = ['cd %s || exit 1' % shq(root)]
        for n, (_, cmd, _) in enumerate(examples):
            cmd = re.sub(r'/tmp/t\b', scratch, cmd).replace('build/tools/tpucc', 'tpucc')
            script.append('echo %s; { %s\n} 2>&1' % (MARK % n, cmd))
        env = dict(os.environ)
        env['PATH'] = bindir + os.pathsep + env.get('PATH', '')
        try:
            r = subprocess.run(['bash'], input='\n'.join(script) + '\n', capture_output=True,
                               text=True, env=env, cwd=root, timeout=900, errors='replace')
            out = r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b'').decode('utf-8', 'replace') + '\n(timed out)\n'
        out = out.replace(scratch, '/tmp/t')
    pieces = {}
    current = None
    for l in out.split('\n'):
        mk = re.fullmatch(r'@@doc-example-(\d+)@@', l)
        if mk:
            current = int(mk.group(1))
            pieces[current] = []
        elif current is not None:
            pieces[current].append(l.rstrip())
    failures = listing_problems(path, root)
    for n, (line, cmd, expected) in enumerate(examples):
        got = pieces.get(n, ['(not reached)'])
        while got and not got[-1]:
            got.pop()
        if not matches(expected, got):
            failures.append('%s:%d: example output differs\n  $ %s\n--- doc\n%s\n--- now\n%s\n' % (
                rel, line, cmd.replace('\n', '\n    '), '\n'.join(expected), '\n'.join(got)))
    return len(examples), failures


def numpy_python():
    """The first python3 (PATH, then /usr/bin) that imports numpy, or None."""
    for p in [shutil.which('python3'), '/usr/bin/python3']:
        if p and subprocess.run([p, '-c', 'import numpy'], capture_output=True).returncode == 0:
            return p
    return None


def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tpucc, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    docs = [os.path.join(root, d) for d in sys.argv[3:]] or (
        [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md'))))
    bindir = tempfile.mkdtemp(prefix='tpucc-doc-bin-')
    try:
        py = numpy_python()
        if py is None:
            print('no python3 with numpy (the docs make .npy files with it): skipped')
            return 77
        os.symlink(py, os.path.join(bindir, 'python3'))
        os.symlink(tpucc, os.path.join(bindir, 'tpucc'))
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda d: run_doc(bindir, root, d), docs))
    finally:
        shutil.rmtree(bindir)
    total = sum(n for n, _ in results)
    failures = [f for _, fs in results for f in fs]
    for f in failures:
        print(f)
    print('%d examples in %d files, %d differ' % (total, len(docs), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
