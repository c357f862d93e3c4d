"""A real headless browser for the page tests: Debian's `chromium`, driven over the Chrome
DevTools Protocol (a WebSocket, python3-websocket). One page, 1280x800; every wait is for an
event or a condition in the page, bounded."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket

WIDTH, HEIGHT = 1280, 800


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self):
        exe = shutil.which("chromium")
        if not exe:
            raise BrowserError("chromium is not installed (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="sg-chromium-")
        # --no-sandbox: the tests run as root in a container-like sandbox, where Chromium's own
        # sandbox cannot start; the pages are our own, from 127.0.0.1.
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-sync",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (WIDTH, HEIGHT),
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port()
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        if not pages:
            raise BrowserError("chromium opened no page")
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []  # (method, params) received while waiting for answers
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)

    def _port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    first = f.readline().strip()
                if first.isdigit():
                    return int(first)
            if self.proc.poll() is not None:
                raise BrowserError("chromium exited %d at start" % self.proc.returncode)
            time.sleep(0.05)
        raise BrowserError("chromium did not open its DevTools port within 30 s")

    def send(self, method, **params):
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mine:
                if "error" in msg:
                    raise BrowserError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append((msg["method"], msg.get("params", {})))

    def open(self, url):
        self.events = []
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete'", 30, "the page loads")

    def js(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError("%s: %s" % (expression[:80], r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expression, timeout, what):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.js("!!(%s)" % expression):
                return
            time.sleep(0.1)
        raise BrowserError("within %d s: %s (%s)" % (timeout, what, expression))

    def console_problems(self):
        """Console errors and warnings the page produced (a CSP refusal is one)."""
        out = []
        for method, p in self.events:
            if method == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(p["entry"].get("text", ""))
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:300])
            if method == "Runtime.consoleAPICalled" and p["type"] in ("error", "warning"):
                out.append(" ".join(str(a.get("value")) for a in p["args"]))
        return out

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing a socket the browser may have closed
            pass
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
