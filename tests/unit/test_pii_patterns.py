"""The offline PII detector (MEMORY_PII_DETECTOR=patterns): a catalogue of what it must find, with
the canonical value each gets, and of the look-alikes it must leave alone."""

import itertools

import pytest

from hippocampus.adapters.pii.patterns import PatternDetector

DETECTOR = PatternDetector()


def found(text: str, detector: PatternDetector = DETECTOR) -> list[tuple[str, str, str]]:
    """(kind, text as written, canonical value) of each span."""
    return [(span.kind, text[span.start : span.end], span.value) for span in detector.detect(text)]


# (sentence, kind, the value as written, its canonical form)
TRUE_POSITIVES = [
    # e-mail: lowercased, without the sentence's punctuation
    ("Write to alice@example.com tomorrow.", "EMAIL", "alice@example.com", "alice@example.com"),
    (
        "Her address is Bob.Jones+news@Mail.Example.co.uk.",
        "EMAIL",
        "Bob.Jones+news@Mail.Example.co.uk",
        "bob.jones+news@mail.example.co.uk",
    ),
    (
        "(contact: ops-team_1@sub.example.org)",
        "EMAIL",
        "ops-team_1@sub.example.org",
        "ops-team_1@sub.example.org",
    ),
    # phone: E.164; without a country code, a US number
    ("Call me on +44 20 7946 0958 after six.", "PHONE", "+44 20 7946 0958", "+442079460958"),
    ("The Berlin office is +49 30 901820.", "PHONE", "+49 30 901820", "+4930901820"),
    ("Paris: +33 1 42 68 53 00, ask for Marie", "PHONE", "+33 1 42 68 53 00", "+33142685300"),
    ("My cell is (415) 555-0132.", "PHONE", "(415) 555-0132", "+14155550132"),
    ("Ring 415-555-0132 if the door is locked", "PHONE", "415-555-0132", "+14155550132"),
    ("or try 415.555.0132 later", "PHONE", "415.555.0132", "+14155550132"),
    ("text +1 415 555 0132 when you land", "PHONE", "+1 415 555 0132", "+14155550132"),
    # a `#` alone is no order number
    ("My phone # 415-555-0132", "PHONE", "415-555-0132", "+14155550132"),
    ("Tel. # (415) 555-0132", "PHONE", "(415) 555-0132", "+14155550132"),
    # payment cards: digits only, whole when written in groups
    ("My Visa is 4111 1111 1111 1111, expiring soon.", "CARD", "4111 1111 1111 1111", "4111111111111111"),
    ("Mastercard 5555-5555-5555-4444 was declined", "CARD", "5555-5555-5555-4444", "5555555555554444"),
    ("The Mastercard 2223 0000 4841 0010 works", "CARD", "2223 0000 4841 0010", "2223000048410010"),
    ("Amex 3782 822463 10005.", "CARD", "3782 822463 10005", "378282246310005"),
    ("card number 4012888888881881 on file", "CARD", "4012888888881881", "4012888888881881"),
    ("Discover 6011 1111 1111 1117", "CARD", "6011 1111 1111 1117", "6011111111111117"),
    ("JCB: 3530111333300000", "CARD", "3530111333300000", "3530111333300000"),
    ("Diners 3056 930902 5904 is the old one", "CARD", "3056 930902 5904", "30569309025904"),
    ("UnionPay 6200 0000 0000 0005", "CARD", "6200 0000 0000 0005", "6200000000000005"),
    ("Maestro 6759 6498 2643 8453", "CARD", "6759 6498 2643 8453", "6759649826438453"),
    # followed by its expiry, or by more digits in groups: the card is the whole groups that make one
    ("My card is 4111 1111 1111 1111 12/27 cvv 123", "CARD", "4111 1111 1111 1111", "4111111111111111"),
    ("CC: 4111-1111-1111-1111 0427", "CARD", "4111-1111-1111-1111", "4111111111111111"),
    # IBANs: compact and uppercase, whole when written in groups
    (
        "Please wire it to GB82 WEST 1234 5698 7654 32 by Friday.",
        "IBAN",
        "GB82 WEST 1234 5698 7654 32",
        "GB82WEST12345698765432",
    ),
    ("IBAN: DE89370400440532013000", "IBAN", "DE89370400440532013000", "DE89370400440532013000"),
    ("my account NL91 ABNA 0417 1643 00.", "IBAN", "NL91 ABNA 0417 1643 00", "NL91ABNA0417164300"),
    (
        "rib fr14 2004 1010 0505 0001 3m02 606 merci",
        "IBAN",
        "fr14 2004 1010 0505 0001 3m02 606",
        "FR1420041010050500013M02606",
    ),
    # SSNs: digits only; without dashes only after "SSN" or "social security"
    ("SSN 123-45-6789", "SSN", "123-45-6789", "123456789"),
    ("Her number, 123-45-6789, is on the form.", "SSN", "123-45-6789", "123456789"),
    ("my SSN is 123456789", "SSN", "123456789", "123456789"),
    ("Social Security number: 123 45 6789", "SSN", "123 45 6789", "123456789"),
    # IP addresses: compressed form
    ("Logins came from 192.168.1.20 at night", "IP", "192.168.1.20", "192.168.1.20"),
    ("The server is 10.0.0.1.", "IP", "10.0.0.1", "10.0.0.1"),
    (
        "host 2001:0db8:0000:0000:0000:ff00:0042:8329 is down",
        "IP",
        "2001:0db8:0000:0000:0000:ff00:0042:8329",
        "2001:db8::ff00:42:8329",
    ),
    ("link-local FE80::1FF:FE23:4567:890A", "IP", "FE80::1FF:FE23:4567:890A", "fe80::1ff:fe23:4567:890a"),
    ("ping 2001:db8::1: no answer", "IP", "2001:db8::1", "2001:db8::1"),
    ("mapped ::ffff:192.0.2.128 here", "IP", "::ffff:192.0.2.128", "::ffff:192.0.2.128"),
]


@pytest.mark.parametrize(("text", "kind", "written", "value"), TRUE_POSITIVES)
def test_finds_each_kind_with_its_canonical_value(text: str, kind: str, written: str, value: str) -> None:
    assert found(text) == [(kind, written, value)]


FALSE_POSITIVES = [
    # order, invoice and tracking numbers
    "Order #112-3456789-1234567 has shipped",
    "Your order number is 100234567.",
    "Order #4155550132 has shipped",
    "invoice no. 4155550132 is overdue",
    "Invoice INV-2023-00042 is due",
    "Tracking 1Z999AA10123456784",
    "USPS tracking 9400 1000 0000 0000 0000 00",
    # dates, times, years, prices, zip codes
    "Meeting on 2023-05-08 at 12:30",
    "Due 05/08/2023, paid 2023-05-08T12:30:45Z",
    "am 8.5.2023 um 12:30:45",
    "in 1999, 2023 and 2024",
    "It costs $1,234.56 plus $ 12 345.00 shipping",
    "Revenue was 4155550132.50 yen",
    "zip 94103 and 94103-1234",
    # versions
    "upgrade to v1.2.3.4",
    "upgrade to version 1.2.3.4",
    "runs on Python 3.11.7",
    # cards: Luhn fails, no issuer prefix, or part of a longer run of digits
    "4111 1111 1111 1112",
    "reference 1000 0000 0000 0008",
    "batch 9000000000000001",
    "serial 12345411111111111111119",
    "parcel 1234 5678 9012 3456 7890",
    "ratio 0.4111111111111111",
    # IBANs with a bad checksum
    "GB82 WEST 1234 5698 7654 33",
    "DE88370400440532013000",
    # SSNs stdnum rejects, and nine digits without an SSN nearby
    "000-12-3456",
    "666-12-3456",
    "900-12-3456",
    "Employee ID 123456789",
    # not IP addresses
    "999.1.1.1 and 256.0.0.1",
    "MAC 00:1A:2B:3C:4D:5E",
    "std::vector and foo :: Int",
    "at 12:30:45",
]


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_leaves_look_alikes_alone(text: str) -> None:
    assert found(text) == []


MIXED = (
    "Hi, I'm reachable at alice@example.com or +44 20 7946 0958 (office: (415) 555-0132). "
    "Pay with 4111 1111 1111 1111 or to GB82 WEST 1234 5698 7654 32 before 2023-05-08; "
    "SSN 123-45-6789, last login from 192.168.1.20 and 2001:db8::1."
)


def test_spans_are_in_order_do_not_overlap_and_point_at_the_values_as_written() -> None:
    spans = DETECTOR.detect(MIXED)
    assert [span.kind for span in spans] == ["EMAIL", "PHONE", "PHONE", "CARD", "IBAN", "SSN", "IP", "IP"]
    assert all(left.end <= right.start for left, right in itertools.pairwise(spans))
    assert [MIXED[span.start : span.end] for span in spans] == [
        "alice@example.com",
        "+44 20 7946 0958",
        "(415) 555-0132",
        "4111 1111 1111 1111",
        "GB82 WEST 1234 5698 7654 32",
        "123-45-6789",
        "192.168.1.20",
        "2001:db8::1",
    ]


def test_two_spellings_of_one_value_share_one_canonical_value() -> None:
    phones = found("Call (415) 555-0132, or +1 415 555 0132, or 415.555.0132.")
    assert {value for _, _, value in phones} == {"+14155550132"} and len(phones) == 3
    cards = found("4111-1111-1111-1111 is 4111111111111111")
    assert {value for _, _, value in cards} == {"4111111111111111"} and len(cards) == 2


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("IBAN DE89370400440532013000", "IBAN"),
        ("IBAN DE89 3704 0044 0532 0130 00", "IBAN"),
        ("card 4111 1111 1111 1111", "CARD"),
        ("card 3782 822463 10005", "CARD"),
        ("SSN 123-45-6789", "SSN"),
        ("my SSN: 123 45 6789", "SSN"),
    ],
)
def test_a_phone_number_never_swallows_a_card_iban_or_ssn(text: str, kind: str) -> None:
    assert [found_kind for found_kind, _, _ in found(text)] == [kind]


def test_already_masked_text_yields_nothing() -> None:
    assert (
        found("Mail [EMAIL_1] or call [PHONE_2]; card [CARD_3], IBAN [IBAN_1], SSN [SSN_12], IP [IP]") == []
    )


def test_numbers_without_a_country_code_are_read_in_the_configured_region() -> None:
    text = "ring 020 7946 0958 tonight"
    assert found(text) == []
    assert found(text, PatternDetector(phone_region="GB")) == [("PHONE", "020 7946 0958", "+442079460958")]


def test_a_text_at_the_item_limit_is_scanned_whole() -> None:
    unit = (
        "On 2023-05-08 at 12:30 we discussed order 123456789, invoice INV-2023-0042 and Python 3.11.7; "
        "mail bob@example.org, call (415) 555-0132, card 4111 1111 1111 1111, 1234 5678 9012 3456 12.5. "
    )
    text = (unit * 200)[:32_000]
    whole = len(text) // len(unit)
    # Each repetition holds an e-mail, a phone and a card, and nothing else, to the last one.
    kinds = [span.kind for span in DETECTOR.detect(text)]
    assert kinds[: 3 * whole] == ["EMAIL", "PHONE", "CARD"] * whole
