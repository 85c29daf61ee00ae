#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An HTTP upstream for the egress tests: answers every GET with the request line and
the headers it received, one per line, so a test sees what the proxy sent upstream.

    echo-headers.py PORT      (listens on 127.0.0.1 only)
"""

import http.server
import sys


class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (self.requestline + "\n" + "".join(f"{k}: {v}\n" for k, v in self.headers.items())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
