#!/usr/bin/env python3
"""The chat template oracle: renders templates with Debian's python3-jinja2 in
the environment transformers builds (chat_template_utils._compile_jinja_template:
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loopcontrols and
the {% generation %} tag; raise_exception, strftime_now, json.dumps tojson;
tools=None, documents=None, the special tokens), over the message lists of
CASES.json, and writes what fm::ChatTemplate must reproduce byte for byte.

usage: chat_oracle.py CASES.json OUT.json NAME=TEMPLATE_SOURCE...
  TEMPLATE_SOURCE is a tokenizer_config.json (its chat_template and tokens)
  or a .jinja file (with bos_token "<s>", eos_token "</s>").
"""
import datetime
import json
import os
import sys

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# strftime_now's clock in the test: 2024-07-26 14:05:09 UTC.
NOW = 1722002709


class AssistantTracker(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.datetime.fromtimestamp(NOW).strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def load(source):
    if source.endswith(".json"):
        cfg = json.load(open(source, encoding="utf-8"))
        template = cfg.get("chat_template")
        if isinstance(template, list):
            template = {t["name"]: t["template"] for t in template}.get("default")
        tokens = {k: token(cfg.get(k)) for k in ("bos_token", "eos_token", "unk_token", "pad_token")}
    else:
        template = open(source, encoding="utf-8").read()
        tokens = {"bos_token": "<s>", "eos_token": "</s>"}
    return template, {k: v for k, v in tokens.items() if v}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    os.environ["TZ"] = "UTC"
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    env = environment()
    out = []
    for spec in sys.argv[3:]:
        name, _, source = spec.partition("=")
        template, tokens = load(source)
        compiled = env.from_string(template)
        for case in cases:
            context = {"messages": case["messages"], "tools": None, "documents": None,
                       "add_generation_prompt": case["add_generation_prompt"], **tokens,
                       **case.get("extra", {})}
            entry = {"template": name, "case": case["name"], "source": template,
                     "context": context}
            try:
                entry["output"] = compiled.render(**context)
            except TemplateError as e:
                entry["error"] = str(e)
            out.append(entry)
    json.dump(out, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
