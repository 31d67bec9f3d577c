#!/usr/bin/env python3
"""Writes Docs/CONFORMANCE.md: every test of AFNetworking's and Alamofire's own suites, with its
Courier twin in Tests/CourierTests/Conformance/ or the reason it has none.

    python3 Scripts/conformance-table.py AFNETWORKING_GIT_DIR ALAMOFIRE_GIT_DIR > Docs/CONFORMANCE.md

The two arguments are git directories (bare clones are fine) of AFNetworking/AFNetworking and
Alamofire/Alamofire. The script reads their test files with `git show` and copies nothing of
them but test names. It reads the twins from this repository: a twin is a test function named
after its source test, in the file named after the source file (`AFX.swift` for AFNetworking's
`AFX.m`, `AlamofireX.swift` for Alamofire's `X.swift`) or one of its parts (`AlamofireX+Topic.swift`),
or `Class_test` when two source classes share the test's name; the table names the twin's file
and function. A doc comment of the twin that starts a line with "Differs" marks a
deliberate difference, whose reason is the comment.
"""
import os
import re
import subprocess
import sys

AF_REF = "HEAD"
AF_OPERATIONS_REF = "2.7.0"  # the last 2.x release: AFHTTPRequestOperation's tests
ALAMOFIRE_REF = "HEAD"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWINS = os.path.join(ROOT, "Tests", "CourierTests", "Conformance")

# Why a source test has no twin, first match wins: (source file regex, regex on "Class.testName", status, reason).
RULES = [
    # AFNetworking
    (r"AFAutoPurgingImageCache|AFImageDownloader|AFUI|AFWKWebView|AFNetworkActivityManager", r".",
     "not applicable", "UIKit/WebKit categories and the activity indicator (Apple-only UI); Courier has no UI layer"),
    (r"^AF", r"SecureCoding|Archived|CanBeEncoded|CanBeDecoded|EncodedAndDecoded",
     "not applicable", "NSSecureCoding archiving (Objective-C); Courier's serializers and policies are Sendable values"),
    (r"AFURLSessionManagerTests", r"Background",
     "not applicable", "background URLSession configurations (Apple-only)"),
    (r"AFURLSessionManagerTests", r"Swizzl",
     "not applicable", "method swizzling of NSURLSessionTask; Courier's tasks are its own types"),
    (r"AFURLSessionManagerTests", r"Metrics", "pending: issue 19", "task metrics (Monitoring)"),
    (r"AFURLSessionManagerTests", r"testSessionRecreatesAgain",
     "deliberately different", "a Courier manager is not reset after invalidation (`resetSession:`); make a new manager"),
    (r"AFHTTPSessionManagerTests", r"testCanBeCopied",
     "deliberately different", "a manager owns its engine and connections and is not copied (NSCopying); make another"),
    (r"AFHTTPSessionManagerTests", r"AuthenticationChallenge", "pending: issue 19", "authentication"),
    (r"AFHTTPSessionManagerTests", r"ServerTrustErrorIsCreated",
     "not applicable", "builds an NSError from a SecTrust (Apple-only); Courier's trust errors carry a ServerTrustFailure, checked by testInvalidServerTrust…"),
    (r"AFHTTPSessionManagerTests", r"ManagerDidFinishBlock",
     "deliberately different", "no manager-wide download destination block; each download task takes its DownloadDestination"),
    (r"AFNetworkReachabilityManagerTests", r"testInitializerThrows|testNewThrows",
     "deliberately different", "AFNetworking forbids `init`/`new` at run time; in Swift `NetworkReachabilityManager()` is the general manager"),
    (r"AFHTTPRequestOperationTests", r"WritingStreamFailure",
     "deliberately different", "2.x operations could write the body to an NSOutputStream; Courier's operations keep it in memory (use a download task for files)"),
    # Alamofire
    (r"CombineTests", r".", "not applicable", "Combine (Apple-only)"),
    (r"URLProtocolTests", r".", "not applicable", "URLProtocol belongs to URLSession; Courier's engine is SwiftNIO (tests use StubEngine)"),
    (r"ProtectedTests|InternalRequestTests", r".", "not applicable", "Alamofire internals (its lock wrapper, its Request state machine)"),
    (r"TLSEvaluationTests", r".", "not applicable", "needs the Internet (badssl.com hosts); the same cases run against TestServer in AFSecurityPolicyTests' twins"),
    (r"ServerTrustEvaluatorTests", r".", "not applicable", "evaluates SecTrust objects with Security.framework (Apple-only); Courier's trust is checked on real handshakes (AFSecurityPolicyTests' twins, the pinning matrix)"),
    (r"NetworkReachabilityManagerTests", r"testThatStatusIs",
     "not applicable", "maps SCNetworkReachabilityFlags (Apple-only); Courier's Linux rule is tested in RoutingSnapshotTests and InterfaceKindTests"),
    # Issue 19 (interceptors, retry, authentication, monitors)
    (r"AuthenticationInterceptorTests", r"Deadlock", "not applicable",
     "Courier's `Authenticator.refresh` is `async`: there is no completion handler to call synchronously on the calling queue"),
    (r"SessionTests", r"ResponseSerializer.*ForDownloads",
     "not built", "a download's file is serialized after its task completed (`DownloadResponse.value(serializedBy:)`): its serializer's failure reaches no retrier"),
    (r"HTTPHeadersTests", r".", "not applicable", "Alamofire's HTTPHeaders type; Courier uses swift-http-types' HTTPFields, tested by that package"),
    (r"UploadTests|DownloadTests", r"LifetimeEvents", "pending: issue 19", "event monitors"),
    (r"LeaksTests", r".", "not applicable", "runs macOS's `leaks` tool at exit; Courier's lifetimes are checked with weak references (Tests/CourierTests/Session/LifetimeTests.swift) and, at the end of every test run, by the live-object census (Tests/CourierTests/Support/LiveObjectCheck.swift), the nearest thing on Linux"),
    (r"DownloadTests", r"ResumeDataIsAvailableWithDecodableResponseSerializer", "deliberately different",
     "a downloaded file is serialized after the download returned (`DownloadResponse.value(serializedBy:)`), so a cancelled download's resume data does not depend on a serializer; it is checked by testThatCancelledDownloadProducesMatchingResumeData"),
    (r"DataStreamTests|RequestTests", r"LifetimeEvents", "pending: issue 19", "event monitors (task creation, metrics, parsing, caching events)"),
    (r"RequestTests", r"AppendingResponseSerializer", "not built",
     "a task has one completion: response serializers are not appended to a request, before or after it completed"),
    (r"RequestTests", r"^RequestCompressionTests\.", "pending: issue 19",
     "the deflate request compressor is an interceptor (Interceptors/Compression), wired into Session under issue 19"),
    (r".", r"(?i)adapted|adaptation|retried", "pending: issue 19", "interceptors, retry and authentication"),
    (r"AuthenticationInterceptorTests|RequestInterceptorTests|RetryPolicyTests|OfflineRetrierTests|AuthenticationTests",
     r".", "pending: issue 19", "interceptors, retry and authentication"),
    (r"RequestModifierTests", r".", "pending: issue 19", "request modifiers (adapters)"),
    (r"CacheTests|CachedResponseHandlerTests", r".", "pending: issue 18", "response cache"),
    (r".", r"(?i)curl.*cookie", "pending: issue 19", "cURLDescription with the session's cookies (the cookies landed under issue 18; the description is issue 19's)"),
    (r".", r"(?i)cookie", "pending: issue 18", "cookies"),
    (r".", r"(?i)interceptor|adapter|retrier|retry|authenticat|credential", "pending: issue 19", "interceptors, retry and authentication"),
    (r".", r"(?i)eventmonitor|monitor(s)?(?!ing)", "pending: issue 19", "event monitors"),
    (r".", r"(?i)metrics", "pending: issue 19", "task metrics"),
    (r".", r"(?i)curl", "pending: issue 19", "cURLDescription"),
    (r".", r"(?i)cach", "pending: issue 18", "response cache"),
]


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def objc_tests(text):
    tests, current = [], None
    for line in text.splitlines():
        m = re.match(r"@implementation\s+(\w+)", line)
        if m:
            current = m.group(1)
        m = re.match(r"-\s*\(void\)\s*(test\w*)\s*(\{|$)", line)
        if m:
            tests.append((current, m.group(1)))
    return tests


def swift_tests(text):
    tests, current, pending_test = [], None, False
    for line in text.splitlines():
        m = re.match(r"(?:final\s+|open\s+)?(?:class|struct)\s+(\w+)", line)
        if m:
            current = m.group(1)
        if re.match(r"\s*@Test\b", line):
            pending_test = True
        m = re.match(r"\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:func)\s+(\w+)\s*\(", line)
        if m:
            name = m.group(1)
            if name.startswith("test") or pending_test:
                tests.append((current, name))
            pending_test = False
    return tests


def twin_lines(file_name):
    """(file, line) for each line of a twin file and of its parts (`AlamofireX+Topic.swift`), in
    name order; the file as `file_name` gives it, relative to the Conformance folder."""
    folder, base = os.path.split(os.path.join(TWINS, file_name))
    if not os.path.isdir(folder):
        return
    stem = base[: -len(".swift")]
    for name in sorted(os.listdir(folder)):
        if name == base or (name.startswith(stem + "+") and name.endswith(".swift")):
            part = os.path.join(os.path.dirname(file_name), name)
            for line in open(os.path.join(folder, name), encoding="utf-8"):
                yield part, line


def twins(file_name):
    """{test name: (differs reason or None, the file that holds it)} for one twin file and its parts."""
    result, doc = {}, []
    for part, line in twin_lines(file_name):
        stripped = line.strip()
        if stripped.startswith("///"):
            doc.append(stripped[3:].strip())
            continue
        m = re.match(r"(?:@Test\b.*?\s)?(?:func)\s+(\w+)\s*\(", stripped) or re.match(r"@Test.*func\s+(\w+)\s*\(", stripped)
        if m:
            text = " ".join(doc)
            differs = re.search(r"\bDiffers\b[:,]?\s*(.*)", text)
            result[m.group(1)] = (differs.group(1).strip().replace("``", "`") if differs else None, part)
            doc = []  # a one-line `@Test func` ends its doc comment too
        if stripped and not stripped.startswith("@"):
            doc = []
    return result


def classify(source_file, name):
    for file_pattern, name_pattern, status, reason in RULES:
        if re.search(file_pattern, source_file) and re.search(name_pattern, name):
            return status, reason
    return "not yet ported", "Courier has the feature; the twin is not written yet"


def rows_for(source_file, tests, twin_file):
    found = twins(twin_file)
    rows, used = [], set()
    for test_class, name in tests:
        # A twin named `Class_name` is the twin of that class's test; a plain name is matched
        # once, by the first class that has it (two source classes may share a name).
        qualified = f"{test_class}_{name}"
        key = qualified if qualified in found else (name if name in found and name not in used else None)
        if key:
            used.add(key)
            reason, part = found[key]
            status = "deliberately different" if reason else "ported"
            twin = f"`{part}` `{key}`"
            rows.append((test_class, name, status, twin, reason or ""))
        else:
            status, reason = classify(source_file, f"{test_class}.{name}")
            rows.append((test_class, name, status, "", reason))
    return rows


def main():
    af_dir, alamofire_dir = sys.argv[1], sys.argv[2]
    sections = []
    af_files = [p for p in git(af_dir, "ls-tree", "-r", "--name-only", AF_REF, "Tests/Tests/").split() if p.endswith(".m")]
    for path in sorted(af_files):
        base = os.path.basename(path)[:-2]
        tests = objc_tests(git(af_dir, "show", f"{AF_REF}:{path}"))
        if tests:
            sections.append((f"AFNetworking `{path}`", rows_for(base, tests, f"AFNetworking/{base}.swift")))
    op_path = "Tests/Tests/AFHTTPRequestOperationTests.m"
    tests = objc_tests(git(af_dir, "show", f"{AF_OPERATIONS_REF}:{op_path}"))
    sections.append((f"AFNetworking {AF_OPERATIONS_REF} `{op_path}`",
                     rows_for("AFHTTPRequestOperationTests", tests, "AFNetworking/AFHTTPRequestOperationTests.swift")))
    al_files = [p for p in git(alamofire_dir, "ls-tree", "-r", "--name-only", ALAMOFIRE_REF, "Tests/").split() if p.endswith(".swift")]
    for path in sorted(al_files):
        base = os.path.basename(path)[:-6]
        tests = swift_tests(git(alamofire_dir, "show", f"{ALAMOFIRE_REF}:{path}"))
        if tests:
            sections.append((f"Alamofire `{path}`", rows_for(base, tests, f"Alamofire/Alamofire{base}.swift")))

    counts = {}
    for _, rows in sections:
        for row in rows:
            counts[row[2]] = counts.get(row[2], 0) + 1
    total = sum(counts.values())
    order = ["ported", "deliberately different", "not applicable", "pending: issue 18", "pending: issue 19", "not built", "not yet ported"]

    out = []
    out.append("# Conformance: AFNetworking's and Alamofire's own tests, run against Courier\n")
    out.append("Courier promises that a person who knows AFNetworking finds their way, and that it behaves as")
    out.append("AFNetworking (and, where Courier has Alamofire's features, Alamofire) does where Linux allows.")
    out.append("The promise is checked by porting the two projects' own test suites: every source test below")
    out.append("has a Courier twin named after it in `Tests/CourierTests/Conformance/` (one file per source")
    out.append("file and its parts, `…+Topic.swift`), or the reason it has none. The twins run against the")
    out.append("in-process `TestServer`, and also against a real httpbin when `COURIER_HTTPBIN_URL` names one")
    out.append("(`.ci/run` starts PyPI's httpbin).\n")
    out.append(f"Sources: AFNetworking `Tests/Tests/*.m` at its last commit, its {AF_OPERATIONS_REF} tag for the 2.x")
    out.append(f"operation tests, and Alamofire `Tests/*.swift` (5.12). This file is written by")
    out.append("`python3 Scripts/conformance-table.py AFNETWORKING_GIT_DIR ALAMOFIRE_GIT_DIR > Docs/CONFORMANCE.md`.\n")
    out.append("Run the twins: `swift test --filter Conformance`.\n")
    out.append("## Summary\n")
    out.append("| status | tests | meaning |")
    out.append("|---|---:|---|")
    meaning = {
        "ported": "a twin runs and passes",
        "deliberately different": "a twin runs and pins Courier's behaviour, which differs on purpose (reason given)",
        "not applicable": "Apple-only API or an Objective-C mechanism with no Linux or Swift counterpart",
        "pending: issue 18": "cookies and cache, being built under issue 18",
        "pending: issue 19": "interceptors, retry, authentication, monitoring and metrics, being built under issue 19",
        "not built": "a feature Courier does not have and no issue plans",
        "not yet ported": "Courier has the feature; the twin is still to be written",
    }
    for status in order:
        if counts.get(status):
            out.append(f"| {status} | {counts[status]} | {meaning[status]} |")
    out.append(f"| **total** | **{total}** | |\n")
    out.append("## Where Courier differs on purpose\n")
    out.append("The rows marked *deliberately different* give each reason; the DocC article *Conformance with AFNetworking and Alamofire*")
    out.append("lists the same. In short: serializers, policies and forms are `Sendable` values (a copy is an")
    out.append("assignment; nothing is archived); a manager owns its connections and is neither copied nor")
    out.append("reset; `NetworkReachabilityManager()` is the general manager; an operation's start and end are")
    out.append("the `.taskDidResume` and `.taskDidComplete` notifications of its task, and its body stays in")
    out.append("memory; a download's destination is given per task; the MIME type of `.cer` is")
    out.append("`application/pkix-cert` (the same table on every platform); `MultipartFormData.contentLength`")
    out.append("is the whole body's length, and writing a form to a file replaces an existing file; a pinning")
    out.append("policy is accepted on a manager without a base URL; a reachability manager's status is unknown")
    out.append("until its monitor answers (as in AFNetworking, unlike Alamofire); an empty body is not an")
    out.append("error (AFNetworking's rule, unlike Alamofire's); a byte-order mark wins over the `charset`;")
    out.append("form encoding writes numbers in their shortest form and `.dropValue` as the bare key; tasks")
    out.append("are URLSession's (made suspended, holding their manager, forgotten without a completion when")
    out.append("dropped unresumed); only `http` and `https` are sent, and a GET may carry a body; there are no")
    out.append("request or serialization queues, and the response hook is synchronous; a streamed body is an")
    out.append("`AsyncSequence` of reads, for one consumer, not validated; the default `User-Agent` has")
    out.append("AFNetworking's form; a form keeps an array's elements in order; an authentication")
    out.append("interceptor holds a request adapted while any refresh is under way; the connectivity")
    out.append("retry leaves on the reachability monitoring it started; a WebSocket's messages are one")
    out.append("`AsyncSequence`, for one consumer, and its opening and close are the task's, not events.\n")
    for title, rows in sections:
        summary = {}
        for row in rows:
            summary[row[2]] = summary.get(row[2], 0) + 1
        out.append(f"## {title}\n")
        out.append(", ".join(f"{summary[s]} {s}" for s in order if summary.get(s)) + "\n")
        out.append("| source test | status | Courier twin / reason |")
        out.append("|---|---|---|")
        for test_class, name, status, twin, reason in rows:
            detail = "; ".join(x for x in [twin, reason] if x)
            label = f"`{test_class}.{name}`" if test_class else f"`{name}`"
            out.append(f"| {label} | {status} | {detail} |")
        out.append("")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
