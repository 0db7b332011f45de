package main

import (
	"net"
	"net/http"
)

// Adversarial probes of who a peer is: peers are told apart by their
// address (127.0.0.2, 127.0.0.3, ... on loopback), never by what they say
// about themselves, and every quota is per peer as well as global.

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}
