"""Reading an attention map with an intervention: change the input character
a row attends to most, then one it ignores, and see whether the character
that row writes changes (chapter 5).

Attention weights say where a step reads, not what it uses: each encoder
state has read its neighbours, so a character can matter without being
looked at. Changing the input and watching the output tests the reading.
"""

from .._checks import require_int


def swap_character(text: str, position: int):
    """``text`` with the character at ``position`` replaced by another of its
    kind, or None if it is neither a digit nor an ASCII letter.

    A digit d becomes (d + 5) mod 10; a letter moves 13 places in the
    alphabet and keeps its case ('May' -> 'Zay' at 0).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    require_int("position", position, minimum=0)
    if position >= len(text):
        raise ValueError(
            f"position {position} is outside text of length {len(text)}"
        )
    char = text[position]
    if char.isdigit() and char.isascii():
        new = str((int(char) + 5) % 10)
    elif char.isascii() and char.isalpha():
        base = ord("a") if char.islower() else ord("A")
        new = chr(base + (ord(char) - base + 13) % 26)
    else:
        return None
    return text[:position] + new + text[position + 1 :]


def attention_intervention(translator, texts, rows):
    """For every text and output row t in ``rows`` (0-based): swap the input
    character the row reads most, then the one it reads least, and record
    whether the character the row writes changes.

    translator: has ``translate(texts, return_weights=True)`` (e.g. the
    book's ``DateTranslator``). Rows whose most-read character is neither a
    digit nor a letter are skipped. Returns a list of dicts, one per (text,
    row): {"text", "row", "attended", "ignored" (positions), "weight_attended",
    "weight_ignored", "changed_attended", "changed_ignored" (bools)}.
    """
    if not callable(getattr(translator, "translate", None)):
        raise TypeError(
            "translator must have a translate(texts, return_weights) method,"
            f" got {type(translator).__name__}"
        )
    if not isinstance(texts, (list, tuple)) or not all(
        isinstance(t, str) for t in texts
    ):
        raise TypeError(f"texts must be a list of strings, got {texts!r:.40}")
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise TypeError(f"rows must be a list of ints, got {rows!r:.40}")
    rows = list(rows)
    for row in rows:
        require_int("row", row, minimum=0)
    outputs, weights = translator.translate(list(texts), return_weights=True)
    plans = []
    for text, out, w in zip(texts, outputs, weights):
        for row in rows:
            if row >= w.shape[0]:
                continue
            order = w[row].argsort(descending=True).tolist()
            swappable = [j for j in order if swap_character(text, j)]
            if not swappable or swappable[0] != order[0]:
                continue
            plans.append((text, out, w, row, swappable[0], swappable[-1]))
    changed = [swap_character(p[0], j) for p in plans for j in p[4:]]
    new_outputs = translator.translate(changed) if changed else []
    records = []
    for i, (text, out, w, row, most, least) in enumerate(plans):
        after_most, after_least = new_outputs[2 * i : 2 * i + 2]
        records.append(
            {
                "text": text,
                "row": row,
                "attended": most,
                "ignored": least,
                "weight_attended": float(w[row, most]),
                "weight_ignored": float(w[row, least]),
                "changed_attended": after_most[row : row + 1] != out[row],
                "changed_ignored": after_least[row : row + 1] != out[row],
            }
        )
    return records
