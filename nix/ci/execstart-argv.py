#!/usr/bin/env python3
"""Print the argv systemd would exec for a unit's ExecStart=, each argument ended by a NUL byte.

    python3 nix/ci/execstart-argv.py UNIT-FILE

Used by nix/ci-check.sh to hand the rendered spool.service's ExecStart to `spool node ... --help`.
It follows systemd's own rules (systemd.service(5) "Command lines", systemd.unit(5)
"Specifiers", load-fragment.c config_parse_exec and env-util.c replace_env_argv, systemd 252):

1. the value is split into words at unquoted whitespace; '...' and "..." quote (anywhere in a
   word), and a backslash starts a C escape (\\a \\b \\f \\n \\r \\t \\v \\\\ \\" \\' \\s \\xHH
   \\NNN \\uHHHH \\UHHHHHHHH) inside quotes or out; any other escape is an error;
2. the first word may carry the prefixes @ - : + ! !!, and must then be an absolute path;
   a lone unquoted ';' would start a second command, which a Type=simple service refuses;
3. specifiers are resolved in every word: %% is %, %d the credentials directory, %n the unit
   name...; an unknown one is an error;
4. unless the ':' prefix was given, environment variables are substituted at exec time:
   $$ is $, ${NAME} is NAME's value from Environment= (empty if unset), a word that is
   exactly $NAME becomes NAME's value split at whitespace.
Exits 1 with a message on anything systemd would reject.
"""
import re
import sys

WHITESPACE = " \t\n\r"


def fail(msg):
    print(f"execstart-argv: {msg}", file=sys.stderr)
    sys.exit(1)


def cunescape_one(s, i):
    """s[i] is the character after a backslash; returns (text, next index)."""
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", '"': '"', "'": "'", "s": " "}
    if i >= len(s):
        fail("the value ends in a lone backslash")
    c = s[i]
    if c in simple:
        return simple[c], i + 1
    for lead, width in (("x", 2), ("u", 4), ("U", 8)):
        if c == lead:
            digits = s[i + 1:i + 1 + width]
            if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                fail(f"invalid escape \\{c}{digits}")
            code = int(digits, 16)
            if code == 0:
                fail("escape \\" + c + digits + " is a NUL byte")
            return chr(code), i + 1 + width
    if c in "01234567":
        digits = s[i:i + 3]
        if len(digits) != 3 or not re.fullmatch(r"[0-7]{3}", digits) or int(digits, 8) == 0:
            fail(f"invalid octal escape \\{digits}")
        return chr(int(digits, 8)), i + 3
    fail(f"invalid escape \\{c}")


def split_words(s):
    words, i, n = [], 0, len(s)
    while True:
        while i < n and s[i] in WHITESPACE:
            i += 1
        if i >= n:
            return words
        if s[i] == ";" and (i + 1 == n or s[i + 1] in WHITESPACE):
            fail("an unquoted ';' starts a second command; a Type=simple service takes one")
        word, quote = [], None
        while i < n:
            c = s[i]
            if c == "\\":
                text, i = cunescape_one(s, i + 1)
                word.append(text)
                continue
            if quote:
                if c == quote:
                    quote = None
                else:
                    word.append(c)
            elif c in "'\"":
                quote = c
            elif c in WHITESPACE:
                break
            else:
                word.append(c)
            i += 1
        if quote:
            fail(f"unbalanced {quote} quote")
        words.append("".join(word))


def resolve_specifiers(word, unit_name):
    spec = {
        "%": "%", "n": unit_name, "N": unit_name.rsplit(".", 1)[0], "p": unit_name.rsplit(".", 1)[0],
        "P": unit_name.rsplit(".", 1)[0], "i": "", "I": "", "j": unit_name.rsplit(".", 1)[0],
        "J": unit_name.rsplit(".", 1)[0], "f": "/" + unit_name.rsplit(".", 1)[0],
        "d": f"/run/credentials/{unit_name}", "t": "/run", "S": "/var/lib", "C": "/var/cache",
        "L": "/var/log", "E": "/etc", "T": "/tmp", "V": "/var/tmp", "h": "/root", "s": "/bin/sh",
        "u": "root", "U": "0", "g": "root", "G": "0",
    }
    out, i = [], 0
    while i < len(word):
        if word[i] == "%":
            if i + 1 >= len(word) or word[i + 1] not in spec:
                fail(f"unknown specifier in {word!r} (write %% for a literal %)")
            out.append(spec[word[i + 1]])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return "".join(out)


def substitute_env(words, env):
    out = []
    for w in words:
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", w)
        if m:
            out.extend(env.get(m.group(1), "").split())
            continue
        res, i = [], 0
        while i < len(w):
            if w.startswith("$$", i):
                res.append("$")
                i += 2
            elif w.startswith("${", i):
                j = w.find("}", i)
                if j < 0:
                    res.append(w[i:])
                    break
                res.append(env.get(w[i + 2:j], ""))
                i = j + 1
            else:
                res.append(w[i])
                i += 1
        out.append("".join(res))
    return out


def main():
    if len(sys.argv) != 2:
        fail("usage: execstart-argv.py UNIT-FILE")
    path = sys.argv[1]
    unit_name = path.rsplit("/", 1)[-1]
    execs, env, section = [], {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1]
                continue
            if section != "Service" or "=" not in line or line.lstrip().startswith(("#", ";")):
                continue
            key, value = line.split("=", 1)
            key = key.strip()
            if key == "ExecStart":
                execs.append(value)
            elif key == "Environment":
                for assignment in split_words(value):
                    if "=" in assignment:
                        k, v = assignment.split("=", 1)
                        env[k] = v
    if len(execs) != 1:
        fail(f"{path} has {len(execs)} ExecStart= lines; a Type=simple service has exactly one")
    words = split_words(execs[0])
    if not words:
        fail("ExecStart= is empty")
    first = words[0]
    prefixes = ""
    while first[:1] in ("@", "-", ":", "+", "!"):
        prefixes += first[0]
        first = first[1:]
    if not first.startswith("/"):
        fail(f"the executable {first!r} is not an absolute path")
    words[0] = first
    if "@" in prefixes:
        fail("the @ prefix (argv[0] differs from the executable) is not expected here")
    words = [resolve_specifiers(w, unit_name) for w in words]
    if ":" not in prefixes:
        words = substitute_env(words, env)
    sys.stdout.write("".join(w + "\0" for w in words))


if __name__ == "__main__":
    main()
