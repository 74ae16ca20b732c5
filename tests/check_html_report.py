#!/usr/bin/env python3
"""Opens strata's HTML reports in headless Chromium and checks the rendered pages.

usage: check_html_report.py STRATA_REPORT COMPARE_OPS [--tensor-parallel PROGRAM] [--screenshot PNG]
                            [--keep DIR]
       check_html_report.py --time PAGE.html [--runs N]

Runs COMPARE_OPS (the main job) into a temporary directory and opens its report.html, then a
report that strata-report html makes of several traces (--compare among them), then one of a
torch.profiler trace with memory events (tests/data/torch/memory.json), then one of a
trace whose names are hostile (quotes, </script>, <!--, an <img onerror>, NUL, U+2028). Each
page is opened from file:// in Debian's chromium, driven through the DevTools protocol over
--remote-debugging-pipe (fd 3: commands in, fd 4: replies and events out, each message JSON
ended by a NUL byte). On every page: each expected section is there with non-empty charts, no
console error or exception, no network request but the file:// document itself; a click on a
table header sorts the table; a drag over the timeline lists the top ops of that stretch; the
hostile names show as text and no injected element or script exists or ran; no section shows
that the page has no data for (a single rank's page has no Distributed section). With
--tensor-parallel PROGRAM (examples/tensor_parallel), a job of three ranks with a straggler
makes one page of its rank traces: its Distributed section has one bar per rank in each chart,
the straggler marked in the straggler strip and named by the recommendations. Bad input (not a
trace, truncated, empty) gives exit status 1, a message and no page. A screenshot of the main
job's report is saved (--screenshot PNG: there, e.g. docs/report.png for the README).

--time PAGE.html loads a page N times (default 3) and prints its size and the median time from
navigation to the load event and to the first frame painted after it (the benchmark's figure).

Chromium missing: the test fails when scripts/lib/common.sh lists the package (scripts/test.sh
installs what it lists), and is skipped (exit 77) only when it does not.
"""
import base64
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message, file=sys.stderr)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    with open(os.path.join(ROOT, "scripts", "lib", "common.sh"), encoding="utf-8") as f:
        listed = re.search(r"STRATA_PACKAGES=\(([^)]*)\)", f.read(), re.S)
    if listed and "chromium" in listed.group(1).split():
        print("chromium is not installed, but scripts/lib/common.sh lists it, so scripts/test.sh "
              "installs it: run scripts/test.sh, or apt-get install chromium", file=sys.stderr)
        sys.exit(1)
    print("SKIP: chromium is not installed (and scripts/lib/common.sh does not list it)")
    sys.exit(77)


class Browser:
    """Headless Chromium on a DevTools pipe, one page attached (flat sessions)."""

    def __init__(self, chromium, profile_dir):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            # Out of the way first (a pipe end may already be fd 3 or 4), then onto 3 and 4:
            # dup2 leaves the copies inheritable.
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--user-data-dir=" + profile_dir, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=fds)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)

    def read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, timeout=30, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self.read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e["method"] == method:
                return self.events.pop(i)
        while True:
            e = self.read_message(deadline)
            if "method" in e:
                if e["method"] == method:
                    return e
                self.events.append(e)

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate {expression[:60]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        # One frame after the load: the page's script has run and laid out.
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def click(self, x, y, to=None):
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        self.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", clickCount=1)
        if to is not None:
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=to, y=y, button="left")
            x = to
        self.call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left", clickCount=1)

    def close(self):
        try:
            os.write(self.to_chrome, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def page_problems(browser, url):
    """Console errors, exceptions and network requests other than `url` itself."""
    problems = []
    for e in browser.events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.exceptionThrown":
            problems.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            problems.append("console " + p["type"] + ": " + json.dumps(p.get("args", []))[:300])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            problems.append("log: " + p["entry"].get("text", "")[:300])
        elif m == "Network.requestWillBeSent" and p.get("request", {}).get("url") != url:
            problems.append("network request: " + p["request"]["url"][:300])
    return problems


SECTION_CHARTS = {
    "summary": ".card",
    "timeline": "svg.strips rect",
    "ops": "svg.bars rect",
    "device": "svg.engines rect, svg.memory polyline",
    "distributed": "svg.ranks rect",
    "compare": "svg.compare rect",
}


def check_page(browser, path, what, sections):
    url = "file://" + os.path.abspath(path)
    browser.open(url)
    for p in page_problems(browser, url):
        fail(f"{what}: {p}")
    present = browser.evaluate("Array.from(document.querySelectorAll('main > section')).map(s => s.id)")
    for s in present:
        if s not in sections:
            fail(f"{what}: section {s} shown, though the page has no data for it")
    for s in sections:
        if s not in present:
            fail(f"{what}: section {s} missing (sections: {present})")
            continue
        n = browser.evaluate(f"document.querySelectorAll('#{s} {SECTION_CHARTS[s]}').length")
        if not n:
            fail(f"{what}: section {s} has an empty chart ({SECTION_CHARTS[s]})")
    # A header click sorts: Self CPU, largest first, then smallest first.
    for want in ("desc", "asc"):
        rect = browser.evaluate("""(() => { const th = Array.from(document.querySelectorAll('#ops0 th'))
            .find(h => h.textContent == 'Self CPU'); th.scrollIntoView({block: 'center'});
            const r = th.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
        browser.click(rect[0], rect[1])
        values = browser.evaluate("""(() => { const t = document.getElementById('ops0');
            const col = Array.from(t.tHead.rows[0].cells).findIndex(h => h.textContent == 'Self CPU');
            return Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[col].getAttribute('data-v'))); })()""")
        expected = sorted(values, reverse=(want == "desc"))
        if len(values) < 2 or values != expected:
            fail(f"{what}: after a click on Self CPU the column is not sorted {want}: {values[:8]}")
    # A drag over the first timeline lists the top ops of that stretch.
    if "timeline" in sections:
        box = browser.evaluate("""(() => { const s = document.querySelector('svg.strips');
            s.scrollIntoView({block: 'center'}); const r = s.getBoundingClientRect();
            return [r.x, r.y, r.width, r.height]; })()""")
        browser.click(box[0] + 2, box[1] + min(24, box[3] / 2), to=box[0] + box[2] - 2)
        items = browser.evaluate("document.querySelectorAll('#topops0 li').length")
        if not items:
            fail(f"{what}: a drag over the whole timeline listed no top ops")
    return browser.evaluate("document.body.innerText")


def x(name, ts, dur, tid=1, cat="framework", pid=1, args=None):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


HOSTILE = [
    "</script><script>window.__pwned = 1</script>",
    "<img src=x onerror=\"window.__pwned = 2\">",
    "<!-- \"quoted\" 'single' & amp",
    "nul\u0000byte",
    "line\u2028separator\u2029paragraph",
    "]]></svg><b id=\"injected\">bold</b>",
]


def hostile_trace(path):
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": HOSTILE[1]}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": HOSTILE[0]}}]
    ts = 0
    for i, name in enumerate(HOSTILE):
        events.append(x(name, ts, 100, args={"correlation_id": i + 1}))
        events.append(x(name + " kernel", ts + 10, 50, cat="device", pid=2, tid=0, args={"correlation_id": i + 1}))
        ts += 120
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events, "otherData": {"strata_version": "0.1.0", "dropped": 0}}, f)


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", timeout=300)


def check_bad_input(strata_report, tmp):
    whole = os.path.join(tmp, "main", "eager", "trace.json")
    with open(whole, "rb") as f:
        head = f.read(700)
    cases = {"empty": b"", "not a trace": b"{\"hello\": [1, 2, 3]}\n", "truncated": head,
             "not json": b"\x89PNG\r\n\x1a\n binary"}
    for what, content in cases.items():
        src = os.path.join(tmp, "bad.json")
        with open(src, "wb") as f:
            f.write(content)
        out = os.path.join(tmp, "bad.html")
        r = run([strata_report, "html", src, "-o", out])
        if r.returncode != 1 or "bad.json" not in r.stderr:
            fail(f"bad input ({what}): exit {r.returncode}, stderr {r.stderr.strip()!r}: wanted 1 and a message naming the file")
        leftovers = [n for n in os.listdir(tmp) if n.startswith("bad.html")]
        if leftovers:
            fail(f"bad input ({what}): left {leftovers}")
    # An unwritable output: an error, and the previous page stays whole.
    r = run([strata_report, "html", whole, "-o", os.path.join(tmp, "no such dir", "report.html")])
    if r.returncode != 1 or "cannot write" not in r.stderr:
        fail(f"unwritable output: exit {r.returncode}, stderr {r.stderr.strip()!r}")


# A job of three ranks, the last one late by 20 ms before each layer (as check_tensor_parallel.py:
# well above the host's scheduling noise on a loaded machine).
JOB_RANKS, JOB_STRAGGLER, JOB_DELAY_US = 3, 2, 20000


def make_job_page(strata_report, tensor_parallel, tmp):
    """Runs the tensor-parallel job into tmp/job and makes one page of its rank traces."""
    job_dir = os.path.join(tmp, "job")
    r = run([tensor_parallel, job_dir, "--ranks", str(JOB_RANKS), "--layers", "3", "--tokens", "8",
             "--straggler", str(JOB_STRAGGLER), "--delay-us", str(JOB_DELAY_US)])
    if r.returncode != 0:
        fail(f"tensor_parallel failed ({r.returncode}): {r.stderr[-2000:]}")
        return None
    traces = sorted(os.path.join(job_dir, n) for n in os.listdir(job_dir) if n.endswith(".pt.trace.json"))
    if len(traces) != JOB_RANKS:
        fail(f"tensor_parallel wrote {len(traces)} rank traces, {JOB_RANKS} expected")
        return None
    page = os.path.join(tmp, "job.html")
    r = run([strata_report, "html"] + traces + ["-o", page])
    if r.returncode != 0:
        fail(f"strata-report html of the job's rank traces failed ({r.returncode}): {r.stderr}")
        return None
    return page


def check_job_page(browser, page):
    what = "distributed job"
    check_page(browser, page, what, ["summary", "timeline", "ops", "device", "distributed"])
    for chart in ("ranks", "overlap", "stragglers"):
        ranks = browser.evaluate(f"""Array.from(document.querySelectorAll('#distributed svg.{chart} g.rank'))
            .map(g => g.getAttribute('data-rank'))""")
        if ranks != [str(r) for r in range(JOB_RANKS)]:
            fail(f"{what}: the {chart} chart has bars for ranks {ranks}, not one per rank 0 to {JOB_RANKS - 1}")
    # Each rank's stacked bar fills its kernel span: its parts add up to the bar's whole width.
    widths = browser.evaluate("""Array.from(document.querySelectorAll('#distributed svg.ranks g.rank'))
        .map(g => Array.from(g.querySelectorAll('rect')).reduce((w, r) => w + r.getBBox().width, 0))""")
    if not widths or any(abs(w - 480) > 1 for w in widths):
        fail(f"{what}: the temporal breakdown bars are {widths} wide, not 480 each")
    marked = browser.evaluate("""Array.from(document.querySelectorAll('#distributed svg.stragglers rect.straggler'))
        .map(r => r.parentNode.getAttribute('data-rank'))""")
    if marked != [str(JOB_STRAGGLER)]:
        fail(f"{what}: the straggler strip marks ranks {marked}, not rank {JOB_STRAGGLER}")
    rows = browser.evaluate("document.querySelectorAll('#ranks0 tbody tr').length")
    if rows != JOB_RANKS:
        fail(f"{what}: the ranks table has {rows} rows, not {JOB_RANKS}")
    recs = browser.evaluate("""Array.from(document.querySelectorAll('#summary li[data-rule=stragglers]'))
        .map(li => li.textContent)""")
    if len(recs) != 1 or f"Rank {JOB_STRAGGLER} starts its collectives" not in recs[0]:
        fail(f"{what}: the recommendations do not name the straggler rank {JOB_STRAGGLER}: {recs}")


def time_page(chromium, page, runs):
    with tempfile.TemporaryDirectory(prefix="strata-html-time-") as tmp:
        browser = Browser(chromium, os.path.join(tmp, "profile"))
        try:
            url = "file://" + os.path.abspath(page)
            loads, paints = [], []
            for _ in range(runs):
                browser.call("Page.navigate", url="about:blank")
                browser.wait_event("Page.loadEventFired")
                start = time.monotonic()
                browser.call("Page.navigate", url=url)
                browser.wait_event("Page.loadEventFired")
                loads.append(time.monotonic() - start)
                browser.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                paints.append(time.monotonic() - start)
            nodes = browser.evaluate("document.getElementsByTagName('*').length")
        finally:
            browser.close()
    loads.sort()
    paints.sort()
    print(f"{page}: {os.path.getsize(page)} bytes, {nodes} elements; median of {runs}: load event "
          f"{loads[runs // 2] * 1000:.0f} ms, first frame after it {paints[runs // 2] * 1000:.0f} ms")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--time"]:
        runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 3
        time_page(find_chromium(), args[1], runs)
        return 0
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    strata_report, compare_ops = args[0], args[1]
    screenshot = args[args.index("--screenshot") + 1] if "--screenshot" in args else None
    tensor_parallel = args[args.index("--tensor-parallel") + 1] if "--tensor-parallel" in args else None
    keep = args[args.index("--keep") + 1] if "--keep" in args else None
    chromium = find_chromium()
    tmp = keep or tempfile.mkdtemp(prefix="strata-html-")
    os.makedirs(tmp, exist_ok=True)
    try:
        main_dir = os.path.join(tmp, "main")
        r = run([compare_ops, main_dir])
        if r.returncode != 0:
            fail(f"compare_ops failed ({r.returncode}): {r.stderr[-2000:]}")
            return 1
        report = os.path.join(main_dir, "report.html")
        if f"report: {report}" not in r.stdout:
            fail(f"compare_ops does not print the report's path ('report: {report}')")
        multi = os.path.join(tmp, "multi.html")
        r = run([strata_report, "html", os.path.join(main_dir, "eager", "trace.json"),
                 os.path.join(main_dir, "compiled", "trace.json"), "-o", multi,
                 "--compare", os.path.join(main_dir, "nki", "trace.json")])
        if r.returncode != 0:
            fail(f"strata-report html of several traces failed ({r.returncode}): {r.stderr}")
        torch = os.path.join(tmp, "torch.html")
        r = run([strata_report, "html", os.path.join(HERE, "data", "torch", "memory.json"), "-o", torch])
        if r.returncode != 0:
            fail(f"strata-report html of torch.profiler's trace failed ({r.returncode}): {r.stderr}")
        hostile_json = os.path.join(tmp, "hostile.json")
        hostile_trace(hostile_json)
        hostile = os.path.join(tmp, "hostile.html")
        r = run([strata_report, "html", hostile_json, "-o", hostile])
        if r.returncode != 0:
            fail(f"strata-report html of the hostile trace failed ({r.returncode}): {r.stderr}")
        check_bad_input(strata_report, tmp)
        job = make_job_page(strata_report, tensor_parallel, tmp) if tensor_parallel else None
        if not tensor_parallel:
            print("no --tensor-parallel PROGRAM: the distributed job's page is not checked")

        browser = Browser(chromium, os.path.join(tmp, "profile"))
        try:
            everything = ["summary", "timeline", "ops", "device", "compare"]
            text = check_page(browser, report, "main job's report", everything)
            for label in ("eager", "compiled", "nki"):
                if label not in text:
                    fail(f"main job's report: no run labelled {label}")
            # The top of the page in a window of that size (the sticky bar stays at the top).
            browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=1500, deviceScaleFactor=1, mobile=False)
            browser.evaluate("window.scrollTo(0, 0); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            shot = browser.call("Page.captureScreenshot", format="png")
            browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)
            png = base64.b64decode(shot["data"])
            target = screenshot or os.path.join(tmp, "report.png")
            with open(target, "wb") as f:
                f.write(png)
            if not png.startswith(b"\x89PNG") or len(png) < 10000:
                fail(f"screenshot {target}: not a PNG of the page ({len(png)} bytes)")
            print(f"screenshot: {target}")

            text = check_page(browser, multi, "multi-trace report", everything)
            if "2 traces" not in text:
                fail("multi-trace report: the run of two traces is not labelled '2 traces'")

            text = check_page(browser, torch, "torch.profiler's trace", ["summary", "timeline", "ops", "device"])
            if "aten::" not in text:
                fail("torch.profiler's trace: no aten:: op on the page")

            text = check_page(browser, hostile, "hostile names", ["summary", "timeline", "ops", "device"])
            pwned = browser.evaluate("typeof window.__pwned")
            if pwned != "undefined":
                fail(f"hostile names: an injected script ran (window.__pwned is {pwned})")
            injected = browser.evaluate("document.querySelectorAll('img, #injected, main script, section script').length")
            if injected:
                fail(f"hostile names: {injected} injected elements in the page")
            for name in HOSTILE:
                shown = name.replace("\u0000", "\ufffd").replace("\u2028", " ").replace("\u2029", " ")
                if shown.split()[0] not in text:
                    fail(f"hostile names: {name!r} is not shown as text")
            if "</script><script>window.__pwned = 1</script>" not in text:
                fail("hostile names: the </script> name is not shown whole as text")
            data = browser.evaluate("JSON.parse(document.getElementById('strata-data').textContent).runs[0].names")
            for name in HOSTILE:
                if name.replace("\u0000", "\ufffd") not in data:
                    fail(f"hostile names: {name!r} does not come back whole from the page's data")

            if job:
                check_job_page(browser, job)
        finally:
            browser.close()
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
        return 1
    print("html report: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
