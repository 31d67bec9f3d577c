// Courier's CI peer: Go's net/http server, an HTTP/1.1 and HTTP/2 implementation nobody on the
// project wrote, for Tests/CourierTests/Interop. It listens on two free loopback ports, one in
// cleartext (HTTP/1.1) and one over TLS offering h2 and http/1.1 through ALPN, with a certificate
// chain it makes at start. It writes, in the folder named by its one argument:
//
//	ca.pem  the root that signed its certificate (127.0.0.1 and localhost)
//	urls    "http://127.0.0.1:P1 https://127.0.0.1:P2" on one line, once both listen
//
// Routes:
//
//	/hello                 "hello <proto> <method>"
//	/big?n=N[&chunked=1]   N bytes of a-z repeated, with Content-Length unless chunked
//	/upload                the request body's length, SHA-256, framing and trailer fields, as JSON
//	/trailers              a body, then the trailer field X-Sum: 42
//	/large-header?n=N      a response whose X-Large field is N bytes long
//	/gzip?n=N              the lines "0" to "N-1", gzip-encoded (Content-Encoding: gzip); about
//	                       4 times smaller, within the ratio a client allows against bombs
//	/close-every?n=N       /hello, closing every N-th response's connection (HTTP/2: GOAWAY)
//	/reject                413 at once, without reading the body
//	/form                  the request's form as Go parses it (query, URL-encoded or multipart body:
//	                       values, and each file's name, type, size and SHA-256), as JSON
//	/json                  the request's JSON body as Go's encoding/json reads it: each leaf by its
//	                       path ("/key/0/..."), as "s:" and the string, "n:" and the number's
//	                       literal, "b:true", "b:false" or "null"; and the decoding error, if any
//	/cookies[/...]         the cookies the request carried, in order, as JSON; ?set=1 sets
//	                       "session" (path /, an hour) and "scoped" (path /cookies/deep), ?clear=1
//	                       deletes "session" (Max-Age 0)
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

type connKey struct{}

// a-z repeated, a whole number of times, so that writing it again and again goes on repeating.
var pattern = func() []byte {
	b := make([]byte, 26*2520)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}()

func count(r *http.Request) int64 {
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func writePattern(w io.Writer, n int64) error {
	for n > 0 {
		k := int64(len(pattern))
		if n < k {
			k = n
		}
		if _, err := w.Write(pattern[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "hello %s %s", r.Proto, r.Method)
	})
	m.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n := count(r)
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		writePattern(w, n)
	})
	m.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		trailers := map[string]string{}
		for name, values := range r.Trailer {
			trailers[name] = strings.Join(values, ", ")
		}
		answer := map[string]any{
			"bytes": n, "sha256": hex.EncodeToString(h.Sum(nil)), "proto": r.Proto, "method": r.Method,
			"contentLength": r.ContentLength, "transferEncoding": strings.Join(r.TransferEncoding, ","),
			"trailers": trailers, "expect": r.Header.Get("Expect"),
		}
		if err != nil {
			answer["error"] = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	})
	m.HandleFunc("/trailers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, "body with a trailer")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Sum", "42")
	})
	m.HandleFunc("/large-header", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Large", strings.Repeat("x", int(count(r))))
		io.WriteString(w, "large header")
	})
	m.HandleFunc("/request-header", func(w http.ResponseWriter, r *http.Request) {
		// The length of the request's field named by ?name= (a long field's round trip).
		fmt.Fprintf(w, "%d", len(r.Header.Get(r.URL.Query().Get("name"))))
	})
	m.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/octet-stream")
		z := gzip.NewWriter(w)
		lines := bufio.NewWriter(z)
		for i, n := int64(0), count(r); i < n; i++ {
			lines.WriteString(strconv.FormatInt(i, 10))
			lines.WriteByte('\n')
		}
		lines.Flush()
		z.Close()
	})
	m.HandleFunc("/close-every", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		served := atomic.AddInt64(r.Context().Value(connKey{}).(*int64), 1)
		if n := count(r); n > 0 && served%n == 0 {
			// HTTP/1.1: the connection closes after this response; HTTP/2: a graceful GOAWAY.
			w.Header().Set("Connection", "close")
		}
		fmt.Fprintf(w, "hello %s %s %d", r.Proto, r.Method, served)
	})
	m.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		type file struct {
			Filename    string `json:"filename"`
			ContentType string `json:"contentType"`
			Size        int64  `json:"size"`
			SHA256      string `json:"sha256"`
		}
		answer := map[string]any{"method": r.Method, "contentType": r.Header.Get("Content-Type")}
		var err error
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			err = r.ParseMultipartForm(32 << 20)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			answer["error"] = err.Error()
		}
		answer["form"] = r.Form
		files := map[string][]file{}
		if r.MultipartForm != nil {
			for name, headers := range r.MultipartForm.File {
				for _, header := range headers {
					f, err := header.Open()
					if err != nil {
						answer["error"] = err.Error()
						continue
					}
					h := sha256.New()
					n, _ := io.Copy(h, f)
					f.Close()
					files[name] = append(files[name], file{header.Filename, header.Header.Get("Content-Type"), n, hex.EncodeToString(h.Sum(nil))})
				}
			}
		}
		answer["files"] = files
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	})
	m.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		decoder := json.NewDecoder(r.Body)
		decoder.UseNumber()
		var value any
		answer := map[string]any{"contentType": r.Header.Get("Content-Type")}
		if err := decoder.Decode(&value); err != nil {
			answer["error"] = err.Error()
		} else if decoder.More() {
			answer["error"] = "more than one JSON value"
		}
		leaves := map[string]string{}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch t := v.(type) {
			case map[string]any:
				for k, x := range t {
					walk(path+"/"+k, x)
				}
			case []any:
				for i, x := range t {
					walk(path+"/"+strconv.Itoa(i), x)
				}
			case json.Number:
				leaves[path] = "n:" + string(t)
			case string:
				leaves[path] = "s:" + t
			case bool:
				leaves[path] = "b:" + strconv.FormatBool(t)
			case nil:
				leaves[path] = "null"
			}
		}
		walk("", value)
		answer["leaves"] = leaves
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	})
	cookies := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("set") != "" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc 1", Path: "/", MaxAge: 3600, HttpOnly: true})
			http.SetCookie(w, &http.Cookie{Name: "scoped", Value: "x", Path: "/cookies/deep"})
		}
		if r.URL.Query().Get("clear") != "" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "", Path: "/", MaxAge: -1})
		}
		sent := [][2]string{}
		for _, c := range r.Cookies() {
			sent = append(sent, [2]string{c.Name, c.Value})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(sent)
	}
	m.HandleFunc("/cookies", cookies)
	m.HandleFunc("/cookies/", cookies)
	m.HandleFunc("/reject", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, "too large")
	})
	return m
}

// certificates makes a root and a leaf for 127.0.0.1 and localhost, valid for a day.
func certificates() (rootPEM []byte, leaf tls.Certificate) {
	now := time.Now()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	root := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Courier CI Go peer root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, &rootKey.PublicKey, rootKey)
	if err != nil {
		log.Fatal(err)
	}
	root, _ = x509.ParseCertificate(rootDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, template, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		log.Fatal(err)
	}
	rootPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER})
	return rootPEM, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go-peer FOLDER")
	}
	folder := os.Args[1]
	rootPEM, leaf := certificates()
	if err := os.WriteFile(filepath.Join(folder, "ca.pem"), rootPEM, 0o644); err != nil {
		log.Fatal(err)
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	serve := func(listener net.Listener, useTLS bool) {
		server := &http.Server{
			Handler: routes(),
			// Each connection's count of responses, for /close-every (HTTP/2 streams share theirs).
			ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, new(int64))
			},
			ErrorLog: log.New(io.Discard, "", 0),
		}
		if useTLS {
			server.TLSConfig = &tls.Config{Certificates: []tls.Certificate{leaf}, NextProtos: []string{"h2", "http/1.1"}}
			log.Fatal(server.ServeTLS(listener, "", ""))
		}
		log.Fatal(server.Serve(listener))
	}
	go serve(plain, false)
	go serve(secure, true)
	urls := fmt.Sprintf("http://%s https://%s\n", plain.Addr(), secure.Addr())
	if err := os.WriteFile(filepath.Join(folder, "urls.tmp"), []byte(urls), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(filepath.Join(folder, "urls.tmp"), filepath.Join(folder, "urls")); err != nil {
		log.Fatal(err)
	}
	select {}
}
