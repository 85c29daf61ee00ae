#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Validate moat sandbox result documents against docs/sandbox-result.schema.json.

    validate-result.py [--schema FILE] [FILE...]

Reads each FILE (standard input when none is named, or for "-"), which must
hold one JSON document, and checks it against the schema with Debian's
python3-jsonschema. Prints nothing for a valid document and one line per
failure otherwise:

    FILE: JSON-PATH: what is wrong

where JSON-PATH names the member, such as $.files.entries[0].mode ($ alone is
the whole document). A file that cannot be read or is not JSON (duplicate
member names and NaN/Infinity included) is one failure at $.

Exit status: 0 when every document is valid, 1 when any is not, 2 when the
command line or the schema itself is wrong or jsonschema is missing.
"""

import argparse
import json
import os
import re
import sys

DEBIAN_PYTHON = "/usr/bin/python3"

try:
    import jsonschema
except ImportError:
    # python3 on PATH may be another installation (pyenv, a venv) without the
    # module: Debian's own python3 has it when python3-jsonschema is installed.
    if (
        os.path.exists(DEBIAN_PYTHON)
        and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON)
        and not os.environ.get("MOAT_VALIDATE_REEXEC")
    ):
        os.environ["MOAT_VALIDATE_REEXEC"] = "1"
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    print(
        "validate-result.py: the Python module jsonschema is missing "
        "(Debian package python3-jsonschema)",
        file=sys.stderr,
    )
    sys.exit(2)

PROG = "validate-result.py"
DEFAULT_SCHEMA = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "sandbox-result.schema.json"
)
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A value quoted in a message is cut to this many characters.
MAX_QUOTE = 60


class NotJSON(ValueError):
    pass


def json_path(parts):
    """The path of a member as $.a.b[0] (names that are not identifiers quoted)."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += "[%d]" % part
        elif IDENT.match(part):
            out += "." + part
        else:
            out += "[%s]" % json.dumps(part)
    return out


def quote(value):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 3] + "..."


def alternatives(error):
    if not error.context:
        return "matches more than one alternative (exactly one is allowed)"
    reasons = sorted({describe(sub) for sub in error.context})
    return "matches none of the alternatives: " + "; ".join(reasons)


def types(value):
    return value if isinstance(value, list) else [value]


def what(schema):
    """What a pattern stands for: the title of its schema, or the pattern."""
    if isinstance(schema, dict) and "title" in schema:
        return schema["title"]
    return "the pattern " + schema["pattern"]


# One message per keyword, in JSON's terms (jsonschema's own quote Python
# values: None, False, 'x'). Keywords not here keep jsonschema's message.
MESSAGES = {
    "type": lambda e: "%s is not of type %s" % (quote(e.instance), " or ".join(types(e.validator_value))),
    "const": lambda e: "%s is not %s" % (quote(e.instance), quote(e.validator_value)),
    "enum": lambda e: "%s is not one of %s"
    % (quote(e.instance), ", ".join(quote(v) for v in e.validator_value)),
    "pattern": lambda e: "%s is not %s" % (quote(e.instance), what(e.schema)),
    # said as the pattern beside it says it, so that the two lines are one
    "format": lambda e: "%s is not %s" % (quote(e.instance), e.schema.get("title", "a " + e.validator_value)),
    "required": lambda e: "missing member %s"
    % ", ".join(quote(k) for k in e.validator_value if k not in e.instance),
    "additionalProperties": lambda e: "member %s not allowed"
    % ", ".join(quote(k) for k in e.instance if k not in e.schema.get("properties", {})),
    "minItems": lambda e: "needs at least %d item(s)" % e.validator_value,
    "minLength": lambda e: "needs at least %d character(s)" % e.validator_value,
    "minimum": lambda e: "%s is less than the minimum %s" % (quote(e.instance), e.validator_value),
    "maximum": lambda e: "%s is more than the maximum %s" % (quote(e.instance), e.validator_value),
    "oneOf": alternatives,
    "anyOf": alternatives,
}


def describe(error):
    """One line for an error, without the dump of the whole instance that
    jsonschema puts in front of some messages."""
    if error.validator == "not" and error.validator_value == {}:
        return "member not allowed here (value %s)" % quote(error.instance)
    if error.validator in MESSAGES:
        return MESSAGES[error.validator](error)
    message = error.message
    instance = repr(error.instance)
    if len(instance) > MAX_QUOTE and message.startswith(instance):
        message = quote(error.instance) + message[len(instance) :]
    return message


def reject_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise NotJSON("duplicate member name %s" % json.dumps(key))
        seen[key] = value
    return seen


def reject_constant(name):
    raise NotJSON("%s is not JSON" % name)


def load(text):
    try:
        return json.loads(
            text, object_pairs_hook=reject_duplicates, parse_constant=reject_constant
        )
    except json.JSONDecodeError as e:
        raise NotJSON("not JSON: %s" % e) from None


def read(name):
    if name == "-":
        return sys.stdin.read()
    with open(name, encoding="utf-8") as f:
        return f.read()


def failures(validator, name):
    """Yield (path, message) for each failure of one document."""
    try:
        document = load(read(name))
    except (OSError, UnicodeDecodeError) as e:
        yield "$", "cannot read: %s" % (e.strerror if isinstance(e, OSError) else e)
        return
    except NotJSON as e:
        yield "$", str(e)
        return
    errors = [(json_path(e.absolute_path), describe(e)) for e in validator.iter_errors(document)]
    yield from sorted(set(errors))


def bundle(schema, schema_dir):
    """Make a $ref to another schema file's definition ("sandbox-result.schema.json#/
    definitions/files", as the diff's files are the result's) a local one: that file's
    definitions join this schema's. Nothing is fetched, and jsonschema's resolvers (which
    differ between versions) are not needed."""

    def walk(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#") and "#/definitions/" in ref:
                name, fragment = ref.split("#", 1)
                with open(os.path.join(schema_dir, name), encoding="utf-8") as f:
                    other = json.load(f)
                for key, value in other.get("definitions", {}).items():
                    schema.setdefault("definitions", {}).setdefault(key, value)
                node["$ref"] = "#" + fragment
            for value in list(node.values()):
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def make_validator(schema_path):
    with open(schema_path, encoding="utf-8") as f:
        schema = bundle(json.load(f), os.path.dirname(os.path.abspath(schema_path)))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker = getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker()
    return cls(schema, format_checker=checker)


def main(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--schema", default=DEFAULT_SCHEMA, help="the schema (default: %(default)s)")
    parser.add_argument("files", nargs="*", metavar="FILE", help="result documents (default: stdin)")
    args = parser.parse_args(argv)

    try:
        validator = make_validator(args.schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        reason = getattr(e, "message", None) or getattr(e, "strerror", None) or str(e)
        print("%s: bad schema %s: %s" % (PROG, args.schema, reason), file=sys.stderr)
        return 2

    bad = False
    for name in args.files or ["-"]:
        label = "<stdin>" if name == "-" else name
        for path, message in failures(validator, name):
            bad = True
            print("%s: %s: %s" % (label, path, message))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
