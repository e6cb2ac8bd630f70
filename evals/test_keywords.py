"""Unit tests of evals.keywords (the support-quote test of evals.answers and evals.changed)."""

from __future__ import annotations

from evals.keywords import holds, keys, squash, words


def test_key_words_drop_stop_words_markup_and_links() -> None:
    quote = "**Out of Office - #670:** see [Tock](https://tock.18f.gov/x.html) for `$25`."
    assert keys(words(quote)) == {"out", "office", "670", "see", "tock", "25", "tock.18f.gov"}
    assert squash("The **Tuesday** `standup`") == "the tuesday standup"


def test_a_quote_is_held_with_half_its_key_words() -> None:
    quote = "Your business cards will arrive 7-10 business days after that."
    # key words: business, cards, will, arrive, 7, 10, days, after (8)
    assert holds(quote, "Cards arrive 7 to 10 days later.")  # cards, arrive, 7, 10, days
    assert not holds(quote, "Order business cards online.")  # business, cards
    assert not holds("the of and", "the of and")  # no key words: never held
