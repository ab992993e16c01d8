"""Colours: one small table per theme, `[repl] style` picks one.

Every colour is one of the terminal's own 16 ANSI colours, never an RGB value: the terminal's
palette maps them to something legible on its own background (Pygments' default style writes
symbols in RGB navy, unreadable on a dark terminal). Plain symbols keep the terminal's
foreground colour in every theme; only the syntax that helps reading is coloured.

  default  readable on dark and light backgrounds alike: normal-intensity colours, no yellow,
           comments dimmed rather than greyed
  dark     bright colours, for a dark background
  light    normal colours with blue for values, for a light background
  none     no colours at all (also what NO_COLOR gives, through prompt-toolkit and rich)

Prose typed at the prompt (text that goes to the LLM) and `,commands` are not highlighted as
Lisp: see `InputLexer`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Theme:
    name: str
    tokens: dict            # Pygments token style name -> prompt-toolkit style
    value: str              # rich style (rich colour names) of the values the Lisp returns
    code: str               # rich Syntax theme for code shown by the LLM side and the gate


_DEFAULT_TOKENS = {
    "pygments.keyword": "ansimagenta bold",
    "pygments.name.builtin": "ansimagenta",
    "pygments.name.function": "ansiblue bold",
    "pygments.name.class": "ansiblue bold",
    "pygments.name.decorator": "ansimagenta",
    "pygments.literal.string": "ansigreen",
    "pygments.literal.string.symbol": "ansicyan",       # CL :keywords
    "pygments.literal.string.char": "ansigreen",
    "pygments.literal.number": "ansicyan",
    "pygments.comment": "italic",
    "pygments.operator": "",
    "pygments.punctuation": "",
    "pygments.name": "",                        # plain symbols: the terminal's foreground
    "pygments.name.variable": "",
    "pygments.error": "ansired",
    # prompt-toolkit's own matching-bracket colours are RGB too
    "matching-bracket.cursor": "fg:default bg:default reverse bold",
    "matching-bracket.other": "fg:default bg:default reverse",
}

THEMES = {
    "default": Theme("default", _DEFAULT_TOKENS, "bold", "ansi_dark"),
    "dark": Theme("dark", dict(_DEFAULT_TOKENS, **{
        "pygments.keyword": "ansibrightmagenta bold",
        "pygments.name.builtin": "ansibrightmagenta",
        "pygments.name.function": "ansibrightblue bold",
        "pygments.name.class": "ansibrightblue bold",
        "pygments.literal.string": "ansibrightgreen",
        "pygments.literal.string.char": "ansibrightgreen",
        "pygments.literal.string.symbol": "ansibrightcyan",
        "pygments.literal.number": "ansibrightcyan",
        "pygments.comment": "ansibrightblack italic",
    }), "bold bright_cyan", "ansi_dark"),
    "light": Theme("light", dict(_DEFAULT_TOKENS, **{
        "pygments.literal.string.symbol": "ansiblue",
        "pygments.literal.number": "ansiblue",
        "pygments.comment": "ansibrightblack italic",
    }), "bold blue", "ansi_light"),
    "none": Theme("none", {"matching-bracket.cursor": "fg:default bg:default reverse bold",
                           "matching-bracket.other": "fg:default bg:default reverse"},
                  "bold", "ansi_dark"),
}


class ThemeError(ValueError):
    pass


def theme_for(config: dict) -> Theme:
    from lispshell.config import ReplSettings, settings

    name = (settings(config, ReplSettings).style or "default").lower()
    if name not in THEMES:
        raise ThemeError(f"[repl] style = {name!r}: choose one of " + ", ".join(THEMES))
    return THEMES[name]


def prompt_style(theme: Theme):
    """The prompt-toolkit Style for the input line (used with include_default_pygments_style
    off, so nothing of Pygments' RGB default style remains)."""
    from prompt_toolkit.styles import Style

    return Style.from_dict(dict(theme.tokens))


def input_lexer(lisp: str, pygments_lexer_class, theme: Theme):
    """The input line's lexer: Lisp highlighting for Lisp, none for prose and commands."""
    from prompt_toolkit.lexers import Lexer, PygmentsLexer, SimpleLexer

    from lispshell.repl.route import LISP, INCOMPLETE, route

    plain = SimpleLexer()
    if theme.name == "none":
        return plain
    lisp_lexer = PygmentsLexer(pygments_lexer_class)

    class InputLexer(Lexer):
        def lex_document(self, document):
            text = document.text
            try:
                kind = route(text, lisp) if text.strip() else LISP
            except Exception:
                kind = LISP
            inner = lisp_lexer if kind in (LISP, INCOMPLETE) else plain
            return inner.lex_document(document)

        def invalidation_hash(self):
            return lisp_lexer.invalidation_hash()

    return InputLexer()
