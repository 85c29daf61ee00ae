#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An HTTP upstream for the egress tests: answers every GET with the request line and
the headers it received, one per line, so a test sees what the proxy sent upstream.

    echo-headers.py PORT [CERT KEY]      (listens on 127.0.0.1 only; TLS with CERT)
"""

import http.server
import ssl
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


server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Echo)
if len(sys.argv) == 4:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
