"""Street addresses in text, by the shape of their street line, without a model.

What is found (kind ``address``, the street line only, not the city):

- English: a house number, one to three capitalised words and a street type ("14 Albion Road",
  "221B Baker Street", "9 Elm Ave");
- French: a number, a street type and a capitalised name ("12 rue des Lilas", "3 bis avenue Foch");
- Spanish, Portuguese, Italian: a street type, a capitalised name and a number ("calle Mayor 5",
  "Rua Augusta, 274", "via Roma 10");
- German and Dutch: a compound street name and a number ("Hauptstraße 12a", "Kerkstraat 5");
- Chinese and Japanese: a region (省 / 市 / 都 / 道 / 府 / 県), a district (区 / 市 / 县 / 町 / 村)
  and a number ("上海市浦东新区世纪大道100号", "東京都新宿区西新宿2-8-1").

Left alone: a street name without a number ("Baker Street"), a city or postcode alone, and
addresses in other shapes (a PO box, a rural route); names and other free-form places need a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from retain.text.findings import Finding

__all__ = ["find_addresses"]

_CAP = r"[A-ZÀ-ÖØ-Þ][\w'’-]*"
_EN_TYPES = (
    r"Road|Rd|Street|St|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Terrace|Close|Crescent"
    r"|Way|Gardens|Square|Row|Parkway|Highway"
)
_ROMANCE_OF = r"(?:(?:de la|de l'|del|de|da|do|dos|das|della|delle|dei|di|du|des|d')\s?)?"
_PATTERNS = (
    rf"\b\d{{1,5}}[A-Za-z]?\s+(?:{_CAP}\s+){{1,3}}(?:{_EN_TYPES})\b\.?",
    rf"\b\d{{1,4}}(?:\s?(?:bis|ter))?,?\s+(?:rue|avenue|boulevard|bd|place|impasse|allée|chemin|quai)\s+"
    rf"{_ROMANCE_OF}{_CAP}(?:[ \t]+{_CAP})*",
    rf"\b(?:calle|c/|avenida|avda\.|plaza|paseo|rua|travessa|via|viale|piazza|corso)\s+{_ROMANCE_OF}{_CAP}"
    r"(?:[ \t]+(?:de |del |da |do |di )?" + _CAP + r")*,?\s*(?:n[º°o.]\s*)?\d{1,4}[a-zA-Z]?\b",
    r"\b[A-ZÄÖÜ][a-zäöüß-]+(?:straße|strasse|str\.|weg|gasse|allee|platz|ring|damm|ufer|straat|laan|gracht|plein)"
    r"\s+\d{1,4}\s?[a-z]?\b",
    r"[^\W\d_A-Za-z到在寄送住是于至往的はにへでをと、，。：:]{1,3}(?:省|市|都|道|府|県|县)[^\W\d_A-Za-z]{1,10}?"
    r"(?:区|區|市|县|縣|郡|町|村)[^\W_A-Za-z]{0,12}?(?:\d+号|\d+丁目(?:\d+(?:[-－]\d+)*)?|\d+(?:[-－]\d+){1,3}|\d+番地?)",
)
_ADDRESS = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))


def find_addresses(text: str) -> Iterator[Finding]:
    """Street lines of postal addresses (see the module docstring for the shapes)."""
    for m in _ADDRESS.finditer(text):
        yield Finding("address", m.start(), m.end(), "pattern:address")
