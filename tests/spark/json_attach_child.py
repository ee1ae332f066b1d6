"""A driver with its UI on (loopback) that attaches SLAQ while a thread polls ``/slaq/json/``, then reproduces the moment
inside Spark's ``WebUI.attachPage`` when the tab's page handler is attached and its JSON handler not yet (by detaching
the JSON one). Prints one JSON line: every answer polled (status, body's first character) and the answer then."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

from pyspark import SparkConf, SparkContext

import slaq


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """Answers as they are: before the tab exists Spark's root handler redirects every unknown path to /jobs/."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


OPENER = urllib.request.build_opener(NoRedirects)


def answer(url: str) -> tuple[int, str]:
    try:
        with OPENER.open(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""


def main() -> None:
    conf = (SparkConf().setMaster("local[1]").setAppName("slaq-json-attach").set("spark.ui.enabled", "true").set("spark.ui.port", "0")
            .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1").set("spark.ui.showConsoleProgress", "false")
            .set("spark.scheduler.mode", "FAIR"))
    sc = SparkContext(conf=conf)
    try:
        url = str(sc.uiWebUrl) + "/slaq/json/"
        polled: list[tuple[int, str]] = []
        answered = threading.Event()

        def poll() -> None:
            while not answered.is_set():
                code, body = answer(url)
                polled.append((code, body[:1]))
                if code == 200:
                    answered.set()

        poller = threading.Thread(target=poll)
        poller.start()
        slaq.attach(sc)
        if not answered.wait(120):
            raise TimeoutError("no 200 from /slaq/json/ within 120 s of attaching")
        poller.join()
        sc._jsc.sc().ui().get().detachHandler("/slaq/json")  # the page's handler alone, as between attachPage's two attaches
        code, body = answer(url)
        print(json.dumps({"polled": polled, "window": [code, body[:200]]}), flush=True)
    finally:
        sc.stop()


if __name__ == "__main__":
    main()
