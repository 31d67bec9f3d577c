// Command go-bench is courier-bench's Go column: Go's net/http client measured on the same URL,
// the same way (issue 29). courier-bench builds and starts it when a `go` toolchain is on the PATH
// (`--clients go`), then sends it one command a line on stdin:
//
//	run N C    send N GETs with C in flight on one http.Client and print one JSON line
//
// Each run reports its own CPU time and voluntary context switches (getrusage, RUSAGE_SELF) over
// the run, so that the column counts Go's client alone, as courier-bench counts its own process.
// Connections are kept alive; -http2 lets the client take h2 through ALPN (ForceAttemptHTTP2),
// without it HTTP/1.1 is used over TLS too.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type result struct {
	Requests          int     `json:"requests"`
	Failures          int64   `json:"failures"`
	Nanoseconds       int64   `json:"nanoseconds"`
	P50Milliseconds   float64 `json:"p50Milliseconds"`
	P99Milliseconds   float64 `json:"p99Milliseconds"`
	CPUMicroseconds   int64   `json:"cpuMicroseconds"`
	VoluntarySwitches int64   `json:"voluntarySwitches"`
	Protocol          string  `json:"protocol"`
}

func usage() (cpu int64, switches int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu = (ru.Utime.Sec+ru.Stime.Sec)*1_000_000 + int64(ru.Utime.Usec+ru.Stime.Usec)
	return cpu, ru.Nvcsw
}

func percentile(sorted []int64, fraction float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(fraction*float64(len(sorted))+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(sorted) {
		rank = len(sorted) - 1
	}
	return float64(sorted[rank]) / 1e6
}

func run(client *http.Client, url string, n, c int) result {
	latencies := make([]int64, n)
	var next, failures int64
	var protocol atomic.Value
	protocol.Store("")
	cpu0, sw0 := usage()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < c && i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := atomic.AddInt64(&next, 1) - 1
				if k >= int64(n) {
					return
				}
				t0 := time.Now()
				resp, err := client.Get(url)
				ok := err == nil && resp.StatusCode == 200
				if err == nil {
					if _, err := io.Copy(io.Discard, resp.Body); err != nil {
						ok = false
					}
					resp.Body.Close()
					protocol.Store(resp.Proto)
				}
				latencies[k] = time.Since(t0).Nanoseconds()
				if !ok {
					atomic.AddInt64(&failures, 1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Nanoseconds()
	cpu1, sw1 := usage()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	return result{
		Requests: n, Failures: failures, Nanoseconds: elapsed,
		P50Milliseconds: percentile(latencies, 0.50), P99Milliseconds: percentile(latencies, 0.99),
		CPUMicroseconds: cpu1 - cpu0, VoluntarySwitches: sw1 - sw0, Protocol: protocol.Load().(string),
	}
}

func main() {
	url := flag.String("url", "", "the URL to GET")
	cacert := flag.String("cacert", "", "a PEM file of roots to trust for https (the system's when empty)")
	h2 := flag.Bool("http2", false, "take HTTP/2 when the server offers it")
	connections := flag.Int("connections", 64, "connections to the host at most")
	flag.Parse()

	tlsConfig := &tls.Config{}
	if *cacert != "" {
		pem, err := os.ReadFile(*cacert)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-bench:", err)
			os.Exit(1)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		tlsConfig.RootCAs = roots
	}
	transport := &http.Transport{
		MaxIdleConns: *connections, MaxIdleConnsPerHost: *connections, MaxConnsPerHost: *connections,
		TLSClientConfig: tlsConfig, ForceAttemptHTTP2: *h2,
	}
	if !*h2 {
		// An empty map turns HTTP/2 off, over TLS too.
		transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	client := &http.Client{Transport: transport}
	encoder := json.NewEncoder(os.Stdout)
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 3 || fields[0] != "run" {
			fmt.Fprintln(os.Stderr, "go-bench: expected 'run N C', got", scanner.Text())
			os.Exit(2)
		}
		n, _ := strconv.Atoi(fields[1])
		c, _ := strconv.Atoi(fields[2])
		encoder.Encode(run(client, *url, n, c))
	}
}
