package apps

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ValidateDomain reports whether d is a CSP origin the extension accepts:
// scheme://host[:port] where scheme is http, https, ws or wss; host is a
// DNS name (whose first label may be "*", for every subdomain),
// localhost, an IPv4 address or a bracketed IPv6 address; port is a
// number from 1 to 65535 or "*". Nothing may follow (no path, query or
// fragment), and nothing that could end a CSP directive or source list
// (spaces, ';', ',', quotes) may appear. The error matches
// ErrInvalidDomain.
func ValidateDomain(d string) error {
	fail := func(why string) error {
		return fmt.Errorf("%w %q: %s (want scheme://host[:port], e.g. https://*.example.com)", ErrInvalidDomain, d, why)
	}
	if d == "" {
		return fail("empty")
	}
	if len(d) > 1024 {
		return fail("longer than 1024 bytes")
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(";,'\"\\", c) >= 0 {
			return fail(fmt.Sprintf("character %q is not allowed", c))
		}
	}
	scheme, rest, ok := strings.Cut(d, "://")
	if !ok {
		return fail("no scheme")
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "ws", "wss":
	default:
		return fail("scheme " + strconv.Quote(scheme) + " (want http, https, ws or wss)")
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#@") {
		return fail("an origin has no path, query, fragment or user info")
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return fail("unclosed IPv6 bracket")
		}
		host, port = rest[1:end], rest[end+1:]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return fail("bad IPv6 address")
		}
		if port != "" {
			p, ok := strings.CutPrefix(port, ":")
			if !ok {
				return fail("junk after the IPv6 address")
			}
			port = p
			if port == "" {
				return fail("empty port")
			}
		}
	} else {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, port = rest[:i], rest[i+1:]
			if port == "" {
				return fail("empty port")
			}
		}
		if err := checkHost(host); err != "" {
			return fail(err)
		}
	}
	if port != "" && port != "*" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fail("port " + strconv.Quote(port) + " (want 1 to 65535 or *)")
		}
	}
	return nil
}

// checkHost returns why host is not a DNS name, a wildcard name or an
// IPv4 address, or "".
func checkHost(host string) string {
	if host == "" {
		return "empty host"
	}
	if len(host) > 253 {
		return "host longer than 253 bytes"
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	labels := strings.Split(host, ".")
	for i, l := range labels {
		if l == "*" && i == 0 && len(labels) > 1 {
			continue
		}
		if l == "" || len(l) > 63 {
			return "host " + strconv.Quote(host) + " has an empty or over-long label"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "host " + strconv.Quote(host) + " has a label that starts or ends with '-'"
		}
		for j := 0; j < len(l); j++ {
			c := l[j] | 0x20
			if !(c >= 'a' && c <= 'z' || l[j] >= '0' && l[j] <= '9' || l[j] == '-') {
				return "host " + strconv.Quote(host) + " has character " + strconv.QuoteRune(rune(l[j]))
			}
		}
	}
	return ""
}
