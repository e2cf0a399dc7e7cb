"""A debate: the moderator creates Pro, Con and a Judge, lets Pro and Con `discuss` while the Judge listens, then asks for a verdict."""

from pathlib import Path

from otel_agents import Agent


def make():
    return Agent("moderator", "You moderate debates. Use task to create Pro, Con and a Judge, discuss to let "
                              "Pro and Con argue with the Judge listening, then discuss again for the Judge's "
                              "verdict, and report it.")


if __name__ == "__main__":
    from examples.common import main

    main(make, "examples.debate:make", Path(__file__).with_suffix(".json"), "Motion: cities should ban cars")
