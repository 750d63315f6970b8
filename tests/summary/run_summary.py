#!/usr/bin/env python3
"""`gpumemtrace summarize` (meson suite 'summary', issue 33 item 1).

    run_summary.py --exe BUILD/tools/gpumemtrace --source SRCDIR [--gen-trace GEN] GROUP

GROUP is one of:
  equal     every golden trace and every H200 tensor fixture (and the NCCL trace from the H200)
            summarized, and its summary's figures set against `report --format json` on the
            same trace: each device's peak (bytes, time, seq, wall clock), leaked, cached,
            library bytes, failures, the tensor level's peak, NCCL's bytes at each peak (the
            report's peak_sites whose stacks have a libnccl frame, found here from the
            report's own call_stacks[]), the timeline's highest point, the header's facts
  bounded   a generated trace of 1,000,000 events over 20,000 distinct stacks: its summary
            stays under 128 KiB, each list at most 10 rows and each timeline 256 points,
            and says how many rows the report had; one of 300,000 events (a timeline of
            2,000+ points) set against its report as in `equal`
  inputs    an unreadable trace among good ones is named and the others are summarized
            (exit 0); nothing readable is exit 3, an empty trace (lost) still getting the
            summary that names it in lost_traces; usage errors exit 2; a directory gives
            one summary per trace in it, named after each trace, beside it; two traces whose
            summaries would share a name: the second is refused, naming both
  outputs   a symlink planted at a summary's name (-o DIR, or beside the trace), to a
            victim file or dangling: refused with exit 2 naming it, the victim unchanged,
            the other summaries written
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TOP = 10
POINTS = 256
BOUND = 128 * 1024

LIBS = ('libcublas', 'libcudnn', 'libnccl', 'libcufft', 'libcusparse', 'libcusolver',
        'libcurand')
HOLDING_CACHES = ('pytorch', 'cupy', 'xla')


def run(args, exe, *argv, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([exe] + list(argv), capture_output=True, text=True, timeout=300, env=e)
    return p.returncode, p.stdout, p.stderr


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def summarize_one(args, trace, out):
    rc, so, se = run(args, args.exe, 'summarize', '-o', out, trace)
    check(rc == 0, f'summarize {trace}: exit {rc}: {se}')
    path = so.strip()
    check(os.path.dirname(path) == out, f'summarize printed {path!r}')
    with open(path) as f:
        return json.load(f), os.path.getsize(path)


def report_of(args, trace):
    rc, so, se = run(args, args.exe, 'report', '--format', 'json', trace)
    check(rc == 0, f'report {trace}: exit {rc}')
    return json.loads(so)


def library_of(frames):
    """The report's rule (explain.c): the innermost native frame in a CUDA library."""
    for f in frames:
        if f['kind'] != 'native' or not f['module']:
            continue
        base = os.path.basename(f['module'])
        for lib in LIBS:
            if base.startswith(lib):
                return lib
    return None


def nccl_at_peaks(rep):
    stacks = {(c['process'], c['stack']): c['call_stack'] for c in rep['call_stacks']}
    out = {}
    for row in rep['peak_sites']:
        for st in row['stacks']:
            if st['cache'] in HOLDING_CACHES:
                continue
            if library_of(stacks.get((row['process'], st['stack']), [])) == 'libnccl':
                out[row['device']] = out.get(row['device'], 0) + st['bytes']
    return out


def compare(trace, s, rep):
    p = rep['processes'][0]
    check(s['kind'] == 'summary' and s['summary_version'] == 1, f'{trace}: kind/version')
    check(s['report_version'] == rep['report_version'], f'{trace}: report_version')
    for k in ('host', 'pid', 'rank', 'coverage', 'complete', 'dropped', 'events',
              'bad_lines', 'end_time_s'):
        check(s[k] == p[k], f'{trace}: {k} {s[k]!r} != report {p[k]!r}')
    check(s['summary'] == rep['summary'], f'{trace}: summary differs from the report\'s')
    for k in ('leaked_bytes', 'cached_at_exit_bytes', 'library_at_exit_bytes',
              'failed_allocations', 'live_at_end_bytes'):
        check(s['summary'][k] == rep['summary'][k], f'{trace}: {k}')
    check(s['devices'] == [pk['device'] for pk in rep['peaks']], f'{trace}: devices')
    check(len(s['peaks']) == len(rep['peaks']), f'{trace}: peaks')
    nccl = nccl_at_peaks(rep)
    for sp, rp in zip(s['peaks'], rep['peaks']):
        for k in ('device', 'bytes', 'time_s', 'seq', 'held_at_end_bytes', 'by_kind'):
            check(sp[k] == rp[k], f'{trace}: device {rp["device"]} {k}')
        rows = [r for r in rep['peak_sites'] if r['device'] == rp['device']]
        check(sp['peak_sites_all'] == len(rows), f'{trace}: peak_sites_all')
        check([r['bytes'] for r in sp['peak_sites']] == [r['bytes'] for r in rows[:TOP]],
              f'{trace}: device {rp["device"]} top sites')
        check(sp['nccl_bytes'] == nccl.get(rp['device'], 0),
              f'{trace}: device {rp["device"]} nccl_bytes {sp["nccl_bytes"]} != '
              f'{nccl.get(rp["device"], 0)}')
        if rp['bytes'] and rp['bytes'] == p['peak_held_bytes'] and rp['time_s'] == p['peak_time_s']:
            check(sp['unix_s'] == p['peak_unix_s'], f'{trace}: unix_s {sp["unix_s"]} != '
                  f'{p["peak_unix_s"]}')
    check(s['nccl']['at_peak_bytes'] == sum(nccl.values()), f'{trace}: nccl at peak')
    check(s['nccl']['at_exit_bytes'] == rep['summary']['library_at_exit']['nccl']['bytes'],
          f'{trace}: nccl at exit')
    check(s['failed_sites_all'] == len(rep['failed_sites']), f'{trace}: failed_sites_all')
    check(s['oom_all'] == len(rep['oom']), f'{trace}: oom_all')
    check([o['cause'] for o in s['oom']] == [o['cause'] for o in rep['oom'][:TOP]],
          f'{trace}: oom causes')
    check(s['leak_sites_all'] == len(rep['leak_sites']), f'{trace}: leak_sites_all')
    check(s['growth_sites_all'] == len(rep['growth_sites']), f'{trace}: growth_sites_all')
    held = {t['device']: t for t in rep['timeline'] if t['kind'] == 'held'}
    check(len(s['timeline']) == len(held), f'{trace}: timeline series')
    for t in s['timeline']:
        rpts = held[t['device']]['points']
        check(len(t['points']) <= POINTS, f'{trace}: timeline points')
        check(t['points_all'] == len(rpts), f'{trace}: points_all')
        if rpts:
            check(max(b for _, b in t['points']) == max(b for _, b in rpts),
                  f'{trace}: timeline peak lost')
            check(t['points'][-1] == rpts[-1], f'{trace}: timeline end lost')
    rt = p.get('tensors')
    if rt is None:
        check(s['tensors'] is None, f'{trace}: tensors')
    else:
        st = s['tensors']
        check(st['peak'] == rt['peak'], f'{trace}: tensor peak')
        check(st['categories'] == rt['categories'], f'{trace}: categories')
        for sd, rd in zip(st['devices'], rt['devices']):
            for k in ('device', 'peak', 'end', 'max_reserved'):
                check(sd[k] == rd[k], f'{trace}: tensors device {k}')
        check(st['ooms_all'] == len(rt['ooms']), f'{trace}: tensor ooms')
    names = set()
    for c in s['call_stacks']:
        names.add(c['stack'])
        check(len(c['call_stack']) <= 16, f'{trace}: frames')
    for sp in s['peaks']:
        for r in sp['peak_sites']:
            if r['stacks'] and r['stacks'][0]['stack'] > 0 and len(s['call_stacks']) < 32:
                check(r['stacks'][0]['stack'] in names, f'{trace}: a top site without stack')


def group_equal(args):
    src = args.source
    traces = []
    gold = os.path.join(src, 'tests', 'golden', 'traces')
    for n in sorted(os.listdir(gold)):
        if n in ('empty.jsonl', 'version2.jsonl'):
            continue
        if os.path.isdir(os.path.join(gold, n)):  # multi/: the ranks of one job
            traces += [os.path.join(gold, n, m) for m in sorted(os.listdir(os.path.join(gold, n)))]
        else:
            traces.append(os.path.join(gold, n))
    fx = os.path.join(src, 'tests', 'fixtures', 'h200-torch2.11')
    for n in sorted(os.listdir(os.path.join(fx, 'tensors'))):
        if n.endswith('.jsonl'):
            traces.append(os.path.join(fx, 'tensors', n))
    traces.append(os.path.join(fx, 'traces', 'nccl.jsonl'))
    saw_nccl = saw_tensors = saw_failure = False
    with tempfile.TemporaryDirectory() as tmp:
        for t in traces:
            out = os.path.join(tmp, os.path.basename(t))
            os.mkdir(out)
            s, _ = summarize_one(args, t, out)
            rep = report_of(args, t)
            compare(t, s, rep)
            saw_nccl |= s['nccl']['at_peak_bytes'] > 0
            saw_tensors |= s['tensors'] is not None
            saw_failure |= s['summary']['failed_allocations'] > 0
    check(saw_nccl and saw_tensors and saw_failure, 'the inputs lack NCCL, tensors or failures')
    print(f'ok: {len(traces)} traces, summaries agree with their reports')


def group_bounded(args):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, 'gpumemtrace.gen.1.rank0.jsonl')
        subprocess.run([args.gen_trace, '--events', '1000000', '--stacks', '20000', '--distinct',
                        '-o', trace], check=True, timeout=300)
        s, size = summarize_one(args, trace, tmp)
        check(os.path.basename(trace).replace('.jsonl', '.summary.json') in os.listdir(tmp),
              'summary name')
        check(size < BOUND, f'summary of 1M events is {size} bytes (bound {BOUND})')
        for sp in s['peaks']:
            check(len(sp['peak_sites']) <= TOP, 'peak sites cut')
            check(sp['peak_sites_all'] > TOP, 'the trace should have many peak sites')
        check(len(s['leak_sites']) <= TOP and s['leak_sites_all'] > TOP, 'leak sites cut')
        check(len(s['oom']) <= TOP and s['oom_all'] == s['summary']['failed_allocations']
              + s['summary']['probe_failures'] + s['summary']['recovered_failures'], 'oom')
        for t in s['timeline']:
            check(len(t['points']) <= POINTS, 'timeline cut')
        check(len(s['call_stacks']) <= 32, 'call stacks cut')
        check(s['events'] >= 1000000, 'events')
        # a smaller one, set against its report: the timeline downsampled (2,000+ points to
        # 256) keeps the peak and the end, the cut lists keep the report's first rows
        trace = os.path.join(tmp, 'gen300k.jsonl')
        subprocess.run([args.gen_trace, '--events', '300000', '--stacks', '500', '-o', trace],
                       check=True, timeout=300)
        out = os.path.join(tmp, 'small')
        os.mkdir(out)
        small, _ = summarize_one(args, trace, out)
        rep = report_of(args, trace)
        check(any(len(t['points']) > POINTS for t in rep['timeline']), 'no long timeline')
        compare(trace, small, rep)
    print(f'ok: 1M events -> {size} bytes; 300k events agree with their report')


def group_inputs(args):
    exe = args.exe
    gold = os.path.join(args.source, 'tests', 'golden', 'traces')
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, 'notatrace.jsonl')
        with open(bad, 'w') as f:
            f.write('hello\n')
        missing = os.path.join(tmp, 'missing.jsonl')
        good = os.path.join(gold, 'basic.jsonl')
        out = os.path.join(tmp, 'out')
        os.mkdir(out)
        rc, so, se = run(args, exe, 'summarize', '-o', out, bad, missing, good)
        check(rc == 0, f'one good trace: exit {rc}')
        check(bad in se and missing in se, f'the unreadable traces are not named: {se}')
        # the trace the user named that is not there is a rank whose story is lost: its
        # summary says so (a check over the summaries fails on it); the file that is no trace
        # at all (another program's, as a glob may name) gets none
        miss = os.path.join(out, 'missing.summary.json')
        check(sorted(os.listdir(out)) == ['basic.summary.json', 'missing.summary.json'],
              f'written: {os.listdir(out)}')
        check(so == miss + '\n' + os.path.join(out, 'basic.summary.json') + '\n',
              f'stdout {so!r}')
        with open(miss) as f:
            s = json.load(f)
        check(s.get('lost_traces') == [{'file': missing,
                                        'reason': 'cannot open: No such file or directory'}],
              f'the summary of a missing trace names it as lost: {s}')
        os.unlink(miss)
        empty = os.path.join(gold, 'empty.jsonl')
        rc, so, se = run(args, exe, 'summarize', '-o', out, bad, empty)
        # the empty trace (its process ended before its tracer wrote a line) is lost, not
        # foreign: its summary is written, saying so, so that a check over the summaries
        # fails on it; the file that is no trace at all gets none
        lost = os.path.join(out, 'empty.summary.json')
        check(rc == 3 and 'no readable trace' in se and so == lost + '\n',
              f'none readable: exit {rc}, stdout {so!r}')
        with open(lost) as f:
            s = json.load(f)
        check(s.get('kind') == 'summary' and 'process' not in s and s.get('file') == empty and
              s.get('lost_traces') == [{'file': empty, 'reason': 'empty file, not a trace'}],
              f'the summary of an empty trace names it as lost: {s}')
        check(sorted(os.listdir(out)) == ['basic.summary.json', 'empty.summary.json'],
              f'written: {os.listdir(out)}')
        with open(os.path.join(out, 'basic.summary.json')) as f:
            check(json.load(f).get('lost_traces') == [], 'a good trace\'s summary: lost_traces []')
        for argv in ([], ['-o'], ['--bogus', good], ['-o', missing, good], ['-o', good, good]):
            rc, so, se = run(args, exe, 'summarize', *argv)
            check(rc == 2, f'summarize {argv}: exit {rc}, expected 2')
        rc, so, se = run(args, exe, 'summarize', '-')
        check(rc == 2 and 'needs -o DIR' in se, 'standard input without -o')
        rc, so, _ = run(args, exe, 'summarize', '--help')
        check(rc == 0 and '-o, --output DIR' in so, 'help')
        rc, so, _ = run(args, exe, 'help', 'summarize')
        check(rc == 0 and 'Usage: gpumemtrace summarize' in so, 'help summarize')

        # a directory: one summary per trace, beside it, named after it
        d = os.path.join(tmp, 'ranks')
        os.mkdir(d)
        with open(good) as f:
            body = f.read()
        names = ['gpumemtrace.node7.4242.rank0.jsonl', 'gpumemtrace.node7.4243.rank1.jsonl']
        for n in names:
            with open(os.path.join(d, n), 'w') as f:
                f.write(body)
        rc, so, se = run(args, exe, 'summarize', d, env={'GMT_JOBS': '2'})
        check(rc == 0, f'directory: exit {rc}: {se}')
        want = [os.path.join(d, n.replace('.jsonl', '.summary.json')) for n in names]
        check(so.split('\n')[:-1] == want, f'directory: {so!r}')
        for w in want:
            check(os.path.exists(w), f'{w} not written')
        # a second run over the directory: the summaries are not traces, nothing new
        rc, so2, se = run(args, exe, 'summarize', d)
        check(rc == 0 and so2 == so, 'summaries taken for traces')
        # the same name twice: refused, naming both
        other = os.path.join(tmp, 'other')
        os.mkdir(other)
        with open(os.path.join(other, names[0]), 'w') as f:
            f.write(body)
        rc, so, se = run(args, exe, 'summarize', '-o', out, os.path.join(d, names[0]),
                         os.path.join(other, names[0]))
        check(rc == 2 and 'would replace' in se and os.path.join(other, names[0]) in se,
              f'same name: exit {rc}: {se}')
    print('ok: inputs')


def group_outputs(args):
    exe = args.exe
    gold = os.path.join(args.source, 'tests', 'golden', 'traces')
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'out')
        os.mkdir(out)
        victim = os.path.join(tmp, 'victim')
        with open(victim, 'w') as f:
            f.write('precious\n')
        os.symlink(victim, os.path.join(out, 'basic.summary.json'))
        os.symlink(os.path.join(tmp, 'nowhere'), os.path.join(out, 'pool.summary.json'))
        rc, so, se = run(args, exe, 'summarize', '-o', out, os.path.join(gold, 'basic.jsonl'),
                         os.path.join(gold, 'pool.jsonl'), os.path.join(gold, 'vmm.jsonl'))
        check(rc == 2, f'planted links: exit {rc}')
        check('basic.summary.json' in se and 'symbolic link' in se, f'not named: {se}')
        with open(victim) as f:
            check(f.read() == 'precious\n', 'the victim was written through the link')
        check(not os.path.exists(os.path.join(tmp, 'nowhere')), 'dangling link followed')
        check(os.path.islink(os.path.join(out, 'basic.summary.json')), 'link replaced')
        check(sorted(os.listdir(out)) == ['basic.summary.json', 'pool.summary.json',
                                          'vmm.summary.json'], f'left: {os.listdir(out)}')
        check(so == os.path.join(out, 'vmm.summary.json') + '\n', f'stdout {so!r}')
        # beside the trace
        tr = os.path.join(tmp, 'basic.jsonl')
        with open(os.path.join(gold, 'basic.jsonl')) as f, open(tr, 'w') as g:
            g.write(f.read())
        os.symlink(victim, os.path.join(tmp, 'basic.summary.json'))
        rc, so, se = run(args, exe, 'summarize', tr)
        check(rc == 2 and 'symbolic link' in se, f'beside: exit {rc}')
        with open(victim) as f:
            check(f.read() == 'precious\n', 'the victim was written through the link')
    print('ok: outputs')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--exe', required=True)
    ap.add_argument('--source', required=True)
    ap.add_argument('--gen-trace')
    ap.add_argument('group', choices=['equal', 'bounded', 'inputs', 'outputs'])
    args = ap.parse_args()
    globals()['group_' + args.group](args)


if __name__ == '__main__':
    main()
