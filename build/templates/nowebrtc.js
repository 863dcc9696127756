// Nothing leaves the tab. The Content-Security-Policy closes every way out but WebRTC, for which
// Chromium enforces no directive (an RTCPeerConnection's offer sends UDP to any STUN address given).
// The page never uses WebRTC, so its constructors are gone before any other script of the page or
// the worker runs. (A script already running could still find them in a new same-origin frame; no
// link or input runs one: the policy allows only this site's scripts and hashed inline ones.)
for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "RTCRtpTransceiver",
                    "RTCIceTransport", "RTCSctpTransport"]) {
  if (name in self) Object.defineProperty(self, name, {value: undefined, writable: false, configurable: false});
}

// No second service worker: only this site's sw.js (build/offline.py SW_FILE) may be registered, as setup.js does. (A script running here could
// otherwise register another file of the site, such as worker.js?x, as a service worker of its own scope, which
// would answer requests under no policy.) The page never needs another; the original is kept only in this closure.
if (self.ServiceWorkerContainer && self.document) {
  const register = ServiceWorkerContainer.prototype.register;
  const allowed = new URL("sw.js", document.baseURI).href;
  Object.defineProperty(ServiceWorkerContainer.prototype, "register", {
    value: function registerOnlyThisSite(url, options) {
      if (new URL(`${url}`, document.baseURI).href !== allowed) {
        return Promise.reject(new DOMException(`only this site's sw.js may be registered, not ${url}`, "SecurityError"));
      }
      return register.call(this, url, options);
    },
    writable: false, configurable: false});
}
