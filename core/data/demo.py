"""A generated, labeled, multi-domain NER demo data set, so the app is useful on first start.

Why generated: no data can be downloaded on first start, and the CrossNER files may not be
there, yet every page (similarity, selection, projection, training) needs a TC, a large mixed
DC, and labeled LC/dev/test splits. The sentences come from hand-written lexicons (invented or
real-sounding names, many of them multi-token) and 40+ sentence patterns per domain, combined
with connective clauses, dates and numbers, so that:

- the five domains (music, science, politics, literature, ai, as in CrossNER) differ in
  vocabulary *and* in entity types, and a selection strategy has something real to find
  when it picks target-domain sentences out of the mixed DC;
- density lands between CoNLL-2003 (~1.7 entities per sentence) and CrossNER (~6);
- the output is a pure function of the seed (one `random.Random`, never the global one).

>>> demo = generate_demo(seed=13, target_domain="music", dc_size=500)
>>> len(demo.dc), len(demo.lc), demo.target_domain
(500, 150, 'music')
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import pyarrow.parquet as pq

from core.data.corpus import Corpus
from core.data.workspace import Role, Workspace, temp_path_for
from core.errors import UserError

Progress = Callable[[float, str], None]

DOMAINS: tuple[str, ...] = ("music", "science", "politics", "literature", "ai")
DEMO_NAMES: dict[Role, str] = {Role.TC: "demo-tc", Role.DC: "demo-dc", Role.LC: "demo-lc",
                               Role.DEV: "demo-dev", Role.TEST: "demo-test"}
DC_CHUNK = 50_000  # DC sentences generated (and written) at a time: memory stays flat for a 10M-sentence DC
GENERATOR_VERSION = 1  # bump when the output for a given seed changes, so stored demos are rewritten
MAX_TOKENS = 40
MIN_TOKENS = 6


def _items(block: str) -> tuple[str, ...]:
    """Entries of a lexicon block: separated by ';' or new lines, surrounding blanks dropped."""
    return tuple(e.strip() for line in block.strip().splitlines() for e in line.split(";") if e.strip())


def _lines(block: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in block.strip().splitlines() if line.strip())


# --------------------------------------------------------------------------- lexicons
#
# Entry syntax: "the |Royal Society" puts an untagged article before the name (templates never
# write "the" before such types); "<year>", "<country>", "<city>" are filled at generation time
# and become part of the entity ("the 1998 general election").

_FIRST_MALE = _items("""
James; Thomas; Daniel; Samuel; Oliver; Henrik; Lukas; Mateo; Rafael; Jonas; Pieter; Tomasz; Andrei; Kenji; Hiroshi; Arjun
Rahul; Kwame; Tunde; Omar; Yusuf; Felix; Hugo; Emil; Leon; Marcus; Adrian; Julian; Simon; Patrick; Declan; Callum; Ewan
Nikolai; Dmitri; Stefan; Marco; Luca; Diego; Pablo; Joaquin; Erik; Anders; Lars; Victor; Edward; Arthur; Gabriel; Theo; Isaac
""")
_FIRST_FEMALE = _items("""
Anna; Clara; Sofia; Elena; Maria; Ingrid; Astrid; Freya; Helena; Isabel; Lucia; Camille; Margot; Amelie; Charlotte; Eleanor
Harriet; Rosalind; Beatrice; Nadia; Leila; Amara; Chiara; Giulia; Ayumi; Yuki; Priya; Anjali; Zainab; Fatima; Olga; Katarina
Marta; Agnes; Greta; Ruth; Miriam; Naomi; Julia; Vera; Ida; Maren; Siobhan; Niamh; Fiona; Eliza; Lena; Hana; Mei; Ines
""")
_SURNAMES = _items("""
Lindqvist; Halvorsen; Moreau; Castellano; Okafor; Mensah; Nakamura; Takahashi; Kowalski; Novak; Petrov; Fischer; Bauer
Hartmann; Keller; Brandt; Dubois; Laurent; Fontaine; Rossi; Bianchi; Ferraro; Moretti; Silva; Costa; Pereira; Almeida; Herrera
Navarro; Ortega; Vargas; Mendes; O'Brien; Gallagher; Byrne; Doyle; MacLeod; Campbell; Fraser; Sinclair; Whitfield; Ashworth
Pemberton; Hawthorne; Blackwood; Thornton; Caldwell; Holloway; Marsh; Fletcher; Prescott; Harrington; Winslow; Mercer
Sterling; Lockhart; Greaves; Rowe; Chandra; Sharma; Iyer; Banerjee; Haddad; Nasser; Aziz; Demir; Yilmaz; Kaya; Andersen
Nygaard; Berg; Dahl; Virtanen; Korhonen; Horvath; Szabo; Dvorak; van Dijk; de Vries; van der Meer; de Souza; Adeyemi; Mwangi
Otieno; Kim; Park; Tanaka; Chen; Liang; Zhou; Nguyen; Tran
""")
_STAGE_NAMES = _items("""
Lady Vesper; Kid Lazuli; DJ Marrow; Little Jonah; Mama Roux; Saint Clementine; Big Ezra; Blind Willie Hatch
Sister Rosetta Vale; MC Harbour; Lil Orbit; Dusty Maple; Johnny Cinder; Velvet Ray; Nova Quinn; Rocco Bell; Memphis Lane
Skye Hollis; Ziggy Marlowe; Lou Barrow; Tex Cardell; Mavis Dune; Ray Santos; Benny Oak; Cass Ember
""")
_PERSON_TYPES = frozenset({"musicalartist", "scientist", "politician", "writer", "researcher", "person"})

_CITIES = _items("""
London; Paris; Berlin; Vienna; Lisbon; Madrid; Oslo; Stockholm; Helsinki; Dublin; Glasgow; Manchester; Liverpool; Edinburgh
Toronto; Montreal; Vancouver; Melbourne; Sydney; Auckland; Osaka; Kyoto; Seoul; Mumbai; Cape Town; Nairobi; Lagos
Buenos Aires; Santiago; Mexico City; Rio de Janeiro; Sao Paulo; Chicago; New Orleans; Nashville; Detroit; Seattle
San Francisco; Los Angeles; Boston; Prague; Budapest; Krakow; Hamburg; Munich; Marseille; Lyon; Barcelona; Porto; Naples
Bologna; Gothenburg; Bergen; Northbridge; Calderwick; Port Ellery; Kestrel Bay; Milhaven; Thornbury; Ashford Vale; Eastmoor
Redhaven; Saltmarsh; Greystone
""")
_COUNTRIES = _items("""
France; Germany; Japan; Brazil; Canada; Australia; Norway; Sweden; Italy; Spain; Portugal; Ireland; Mexico; Argentina; Chile
India; South Korea; New Zealand; Belgium; Austria; Switzerland; Poland; Finland; Denmark; Iceland; Greece; Turkey; Egypt
Kenya; Nigeria; South Africa; Morocco; Vietnam; Indonesia; Thailand; Peru; Colombia; Hungary; Czech Republic; Scotland; Ghana
Estonia; England; Wales
""")
_UNIVERSITIES = _items("""
the |University of Northbridge; Calderwick Institute of Technology; Halden University; the |University of Port Ellery
Kestrel College; Marlowe University; the |University of Oslo; the |University of Cambridge; ETH Zurich; the |Sorbonne
the |University of Tokyo; Heidelberg University; McGill University; the |University of Edinburgh; Uppsala University
Imperial College London; the |University of Vienna; Leiden University; Ashford University; Thornbury College
the |Royal Institute of Technology; the |University of Melbourne; Trinity College Dublin; Harbour State University
Eastmoor Polytechnic; the |University of Lisbon; Kyoto University; the |Technical University of Munich
the |University of Copenhagen; Westfield University
""")

# "{place}" renders "City , Country" with a country that fits the city.
_CITY_COUNTRY: dict[str, str] = dict(pair.split(":") for pair in _items("""
London:England; Paris:France; Berlin:Germany; Vienna:Austria; Lisbon:Portugal; Madrid:Spain; Oslo:Norway; Stockholm:Sweden
Helsinki:Finland; Dublin:Ireland; Glasgow:Scotland; Manchester:England; Liverpool:England; Edinburgh:Scotland; Toronto:Canada
Montreal:Canada; Vancouver:Canada; Melbourne:Australia; Sydney:Australia; Auckland:New Zealand; Osaka:Japan; Kyoto:Japan
Seoul:South Korea; Mumbai:India; Cape Town:South Africa; Nairobi:Kenya; Lagos:Nigeria; Buenos Aires:Argentina; Santiago:Chile
Mexico City:Mexico; Rio de Janeiro:Brazil; Sao Paulo:Brazil; Prague:Czech Republic; Budapest:Hungary; Krakow:Poland
Hamburg:Germany; Munich:Germany; Marseille:France; Lyon:France; Barcelona:Spain; Porto:Portugal; Naples:Italy; Bologna:Italy
Gothenburg:Sweden; Bergen:Norway; Northbridge:England; Calderwick:Scotland; Port Ellery:Ireland; Kestrel Bay:Canada
Milhaven:England; Thornbury:England; Ashford Vale:England; Eastmoor:England; Redhaven:Canada; Saltmarsh:England
Greystone:Scotland
"""))
_CITY_PAIRS = tuple(_CITY_COUNTRY.items())

_SHARED: dict[str, tuple[str, ...]] = {"location": _CITIES, "country": _COUNTRIES, "university": _UNIVERSITIES}

_LEXICON: dict[str, dict[str, tuple[str, ...]]] = {
    "music": {
        "band": _items("""
            The Silver Harbour; The Paper Lanterns; Velvet Engine; The Midnight Orchard; Copper Sky; The Hollow Pines
            Northern Static; The Lonely Satellites; Saltwater Choir; Iron Meridian; The Kestrels; Blue Monsoon; Echo Parade
            The Wandering Hours; Neon Pilgrims; Falling Cathedrals; The Marigolds; Static Bloom; Ghost Harbour
            The Amber Lights; Lowland Sirens; The Foxglove Trio; Black Lagoon Orchestra; The Tin Soldiers; Summer Riot
            The Quiet Machines; Paper Tigers; The Night Ferries; Seventh Wave; Wolves of Avalon; The Golden Hour
            Crimson Alley; Dead Calm Society; The Rusty Compasses; Morning Parade; Violet Transit; The Honey Thieves
            Atlas Drift; Silent Lighthouse; The Broken Clocks; Lunar Caravan; Sugar Ghosts; The Low Tides"""),
        "song": _items("""
            Northern Skies; Paper Hearts; Slow Burn; Lights of Lisbon; River of Glass; Midnight Train to Oslo; Hold the Line
            Blue Horizon; Wildfire; Cold Coffee; Golden Days; All the Quiet Places; Last Dance in Vienna; Heartbeat City
            Electric Rain; Some Kind of Summer; Strangers Again; Carry Me Home; Sweet Release; Ghosts of Tomorrow
            Underneath the Stars; Broken Compass; Lay Down Your Arms; The Long Goodbye; Tell Me Something True
            Small Town Saints; Runaway Heart; Silver Lining; Whisper; Saltwater; Monday Morning; Fireflies in June; Holy Water
            City of Echoes; Shadows on the Wall; Ocean Drive; Daylight; Kingdom Come; Letters Home; Neon Rosary"""),
        "album": _items("""
            Harbour Lights; The Northern Sessions; Glass Houses; Midnight Cartography; Songs for the Long Winter; Neon Gospel
            Still Life with Guitar; Weather Systems; The Atlas Tapes; Blue Hour; Postcards from Nowhere; A Map of the Sea
            Second Nature; Kingdom of Rain; Electric Pastures; The Quiet Revolution; Copper and Salt; Homecoming; Night Ferry
            Lanterns; The Long Way Round; Ashes and Orchids; Orchard Road; Beautiful Machinery; Wildflower Radio; Tidal
            The Golden Mile; Silhouettes; Low Country; House of Mirrors; Afterglow; Continental Drift; Signal Fires
            Dream Logic; Palace of Wires; Summer of Ghosts; Small Hours; Paper Crowns"""),
        "musicgenre": _items("""
            rock; jazz; blues; folk; pop; hip hop; soul; funk; reggae; punk rock; post-punk; heavy metal; indie rock
            alternative rock; electronic music; techno; house music; drum and bass; country music; bluegrass; gospel
            rhythm and blues; progressive rock; psychedelic rock; shoegaze; synth-pop; new wave; grunge; ambient; trip hop
            bossa nova; flamenco; opera; chamber music; classical music; disco; dream pop; garage rock; art rock; krautrock
            swing; bebop; free jazz; hardcore punk"""),
        "musicalinstrument": _items("""
            guitar; electric guitar; bass guitar; piano; drums; violin; cello; saxophone; trumpet; double bass; clarinet
            flute; harmonica; mandolin; banjo; accordion; organ; Hammond organ; synthesizer; ukulele; harp; trombone
            keyboards; pedal steel guitar; sitar; oboe; viola; lap steel guitar; French horn; glockenspiel; tabla; bagpipes"""),
        "award": _items("""
            Grammy Award for Best New Artist; Grammy Award for Album of the Year; Mercury Prize; Brit Award for British Group
            Juno Award for Alternative Album of the Year; Polaris Music Prize; Ivor Novello Award; Golden Reel Award
            Northern Music Prize; Harbour Lights Award; Silver Clef Award; Lifetime Achievement Award; Choice Music Prize
            Nordic Music Prize; Independent Music Award for Best Folk Album; Kestrel Prize for Songwriting"""),
        "organisation:label": _items("""
            Blue Lantern Records; Northway Records; Halcyon Sound; Paper Moon Recordings; Greystone Music Group
            Atlas Sound Company; Redwing Records; Silver Fern Records; Tidewater Records; Meridian Music; Foxglove Records
            Kingfisher Recordings; Lowlight Records; Cinder Block Records"""),
        "organisation:orchestra": _items("""
            the |Calderwick Philharmonic Orchestra; the |Northbridge Symphony Orchestra; the |Eastmoor Chamber Orchestra
            the |Harbour String Ensemble"""),
        "organisation": _items("""
            Radio Meridian; the |BBC; Harbour FM; the |Musicians Union; the |Royal Academy of Music
            the |Northbridge Conservatory; the |Society of Composers"""),
        "event": _items("""
            the |Glastonbury Festival; the |Eurovision Song Contest; the |Roskilde Festival; the |Montreux Jazz Festival
            the |Newport Folk Festival; the |Northbridge Folk Festival; the |Harbour Sounds Festival
            the |Summer Lights Festival; the |Kestrel Bay Jazz Weekend; the |Calderwick Music Week; Live Aid
            the |<year> Winter Echoes Tour; the |Saltmarsh Blues Festival; the |<city> Jazz Festival"""),
        "location": _CITIES + _items("""
            the |Royal Albert Hall; Carnegie Hall; the |Harbour Ballroom; the |Paradiso; Wembley Stadium
            the |Kestrel Bay Arena; the |Olympia Theatre; the |Lighthouse Club"""),
    },
    "science": {
        "chemicalelement": _items("""
            hydrogen; helium; lithium; carbon; nitrogen; oxygen; sodium; magnesium; aluminium; silicon; phosphorus; sulfur
            chlorine; argon; potassium; calcium; titanium; iron; cobalt; nickel; copper; zinc; gallium; germanium; selenium
            bromine; krypton; strontium; silver; tin; iodine; xenon; platinum; gold; mercury; lead; radium; uranium; plutonium
            polonium; thorium; neon; boron; fluorine; lanthanum; cerium"""),
        "chemicalcompound": _items("""
            water; carbon dioxide; methane; ammonia; sodium chloride; sulfuric acid; ethanol; benzene; glucose
            hydrogen peroxide; nitrous oxide; acetone; calcium carbonate; silicon dioxide; ozone; formaldehyde; acetic acid
            nitric acid; potassium nitrate; titanium dioxide; carbon monoxide; hydrochloric acid; sodium hydroxide; propane
            urea; cholesterol; caffeine"""),
        "discipline": _items("""
            physics; chemistry; biology; astronomy; astrophysics; biochemistry; organic chemistry; geology; ecology; genetics
            molecular biology; particle physics; thermodynamics; crystallography; neuroscience; immunology; microbiology
            condensed matter physics; mathematics; oceanography; meteorology; paleontology; evolutionary biology
            inorganic chemistry; physical chemistry; cosmology; materials science; seismology; botany; zoology; virology
            epidemiology; pharmacology; nuclear physics"""),
        "theory": _items("""
            general relativity; special relativity; quantum field theory; string theory; the |theory of evolution
            plate tectonics; the |Big Bang theory; the |germ theory of disease; the |kinetic theory of gases; cell theory
            atomic theory; the |Standard Model; chaos theory; the |Halvorsen conjecture; quantum electrodynamics
            inflationary cosmology; natural selection; band theory; density functional theory; BCS theory
            loop quantum gravity; continental drift; endosymbiotic theory; the |Lindqvist-Moreau hypothesis"""),
        "astronomicalobject": _items("""
            Mars; Jupiter; Saturn; Venus; Neptune; Uranus; Pluto; the |Moon; Titan; Europa; Ganymede; Io; Enceladus
            the |Andromeda Galaxy; the |Milky Way; the |Orion Nebula; the |Crab Nebula; Sirius; Betelgeuse; Proxima Centauri
            Alpha Centauri; Halley's Comet; Ceres; Vesta; Kepler-22b; TRAPPIST-1; Vega; Polaris; Rigel; the |Triangulum Galaxy
            the |Large Magellanic Cloud; the |Eagle Nebula"""),
        "academicjournal": _items("""
            Nature; Physical Review Letters; The Lancet; the |Journal of the American Chemical Society; Cell
            Annals of Physics; the |Journal of Molecular Biology; the |Astrophysical Journal
            the |Proceedings of the Royal Society; Chemical Reviews; Geophysical Research Letters
            the |Journal of Theoretical Biology; the |Northbridge Journal of Chemistry; Annals of Applied Crystallography
            the |Review of Stellar Physics; the |Journal of Ecological Methods"""),
        "protein": _items("""
            hemoglobin; insulin; myoglobin; collagen; keratin; actin; myosin; ferritin; p53; albumin; lysozyme; rhodopsin
            tubulin; green fluorescent protein; cytochrome c; ubiquitin"""),
        "enzyme": _items("""
            DNA polymerase; RNA polymerase; catalase; amylase; pepsin; trypsin; lipase; reverse transcriptase; ATP synthase
            lactase; helicase; carbonic anhydrase"""),
        "award": _items("""
            Nobel Prize in Chemistry; Nobel Prize in Physics; Nobel Prize in Physiology or Medicine; Wolf Prize in Physics
            Copley Medal; Davy Medal; Lasker Award; Crafoord Prize; Kavli Prize in Astrophysics; Breakthrough Prize
            Halden Medal; Lindqvist Prize for Physics; Royal Medal; Priestley Medal"""),
        "organisation": _items("""
            the |European Space Agency; the |Royal Society; the |National Institute of Molecular Research
            the |Halden Institute; CERN; the |Max Planck Institute for Chemistry; the |Lindqvist Foundation
            the |Institute for Advanced Materials; the |Northbridge Observatory; NASA; the |Wellcome Trust
            the |Academy of Sciences; the |Calderwick Marine Laboratory; the |Society for Applied Chemistry"""),
        "location": _CITIES,
        "country": _COUNTRIES,
        "university": _UNIVERSITIES,
    },
    "politics": {
        "politicalparty": _items("""
            Labour Party; Conservative Party; Liberal Democrats; Social Democratic Party; Green Party
            Christian Democratic Union; National Party; Progressive Alliance; People's Party; Reform Party; Centre Party
            Left Alliance; Liberal Party; Socialist Party; Free Democratic Party; Pirate Party; New Horizon Party
            Civic Platform; Unity Coalition; Northern League; Radical Liberal Party; Party for Freedom; Movement for Change
            Agrarian Union; Social Liberal Party; Christian People's Party; Democratic Renewal; Independence Party
            Moderate Party; Coalition for Democracy"""),
        "election": _items("""
            <year> general election; <year> presidential election; <year> parliamentary election
            <year> European Parliament election; <year> local elections; <year> <city> mayoral election
            <year> <country> general election; <year> leadership election; <year> regional elections; <year> federal election
            <year> <country> presidential election; <year> snap election"""),
        "organisation": _items("""
            the |United Nations; the |European Union; NATO; the |World Bank; the |International Monetary Fund
            the |Supreme Court; the |Electoral Commission; the |Senate; the |Council of Europe; the |Red Cross
            Amnesty International; the |Trades Union Congress; the |National Farmers Federation; the |Federation of Industry
            the |Institute for Public Policy; the |Central Bank; the |World Health Organization; the |African Union
            the |Nordic Council; the |Constitutional Court; the |Ministry of Defence; the |Northern Mineworkers Union
            Transparency International; the |Commonwealth; the |Organisation for Economic Co-operation and Development"""),
        "event": _items("""
            the |Cold War; the |Second World War; the |First World War; the |Velvet Revolution; the |Arab Spring
            the |Carnation Revolution; the |Great Depression; the |Suez Crisis; the |Winter Strikes; the |Balkan Wars
            the |Oil Crisis; the |<year> financial crisis; the |Miners' Strike; the |Harbour Riots; the |Northbridge Summit"""),
        "location": _CITIES + _items("""
            Northbridge East; Calderwick South; West Ashford; Milhaven North; Thornbury and Eastmoor; Greystone Central"""),
        "country": _COUNTRIES,
    },
    "literature": {
        "book": _items("""
            The Salt Road; A Winter in Calderwick; The Cartographer's Daughter; Bright Ashes; The Glass Orchard
            Letters from the Lighthouse; The Long Silence; Children of the Tide; The House on Marlowe Street
            Under a Paper Sky; Iron and Lace; The Last Summer; A Grammar of Stones; The Drowned Library; Fathers and Strangers
            Night Train to Northbridge; Small Mercies; The Weight of Snow; Kingdom of Dust; The Clockmaker's Wife
            Sea of Lanterns; Between Two Rivers; The Quiet Heart; A Map of Lost Things; Ash and Ember; The Inheritance
            The Summer Guests; Bitter Almonds; The Memory Thief; The Ferryman's Song; Wild Geese; The Silent Coast
            The Book of Hours; An Unfinished Portrait; Harvest Moon; The Marble Garden; The Orphans of Eastmoor"""),
        "poem": _items("""
            Ode to the North Wind; The Drowned Sailor; Elegy for a Lost Harbour; Winter Orchard; The Lantern Bearer
            Sonnet for My Father; Night Crossing; The Stone Gate; Song of the Ferryman; The Wild Swans at Evening
            A Letter to the River; The Burning Field; Pilgrim; Meditation at Thornbury; The Blackbird's Hymn; Autumn Psalm
            Ballad of the Salt Road; Hymn to Saint Agnes; The Clock Tower; Returning; Litany of Small Things; The Bell Ringer
            Variations on a Lake; The Hollow Men of Greystone"""),
        "literarygenre": _items("""
            poetry; science fiction; fantasy; gothic fiction; magical realism; historical fiction; crime fiction
            detective fiction; satire; memoir; biography; epic poetry; lyric poetry; free verse; tragedy; comedy
            literary fiction; young adult fiction; horror fiction; romance; travel writing; children's literature
            dystopian fiction; realism; nature writing"""),
        "magazine": _items("""
            The Northbridge Review; Paper Lantern Quarterly; Granta; The Paris Review; The New Yorker
            Harbour Literary Monthly; The Calderwick Gazette; Ashford Quarterly; The Marlowe Journal; Kestrel Magazine
            The London Magazine; Blackwood's Magazine; The Saltmarsh Reader"""),
        "award": _items("""
            Booker Prize; Pulitzer Prize for Fiction; Hugo Award; Nebula Award; Prix Goncourt; Costa Book Award
            Whitbread Prize; Nobel Prize in Literature; National Book Award; Women's Prize for Fiction; Marlowe Prize
            Ashcombe Prize for Poetry; Northbridge Fiction Prize; Kestrel Award for a First Novel"""),
        "organisation": _items("""
            Harrow & Finch; Blackthorn Press; Lantern House; Penwick Books; Oakleaf Publishing; Cardinal Press
            Whitmore & Sons; Marigold Editions; Riverside Press; Northgate Books; the |Royal Society of Literature
            the |PEN Club; the |Calderwick Library"""),
        "event:festival": _items("""
            the |Frankfurt Book Fair; the |Hay Festival; the |Edinburgh International Book Festival
            the |Northbridge Literary Festival; the |Salzburg Poetry Week; the |Calderwick Book Fair"""),
        "event:war": _items("""
            the |Spanish Civil War; the |Second World War; the |First World War; the |French Revolution; the |Great Famine
            the |Crimean War; the |Russian Revolution; the |Irish War of Independence"""),
        "location": _CITIES,
        "country": _COUNTRIES,
    },
    "ai": {
        "algorithm": _items("""
            backpropagation; gradient descent; stochastic gradient descent; support vector machines; random forests
            k-means clustering; convolutional neural networks; recurrent neural networks; long short-term memory
            the |transformer; conditional random fields; hidden Markov models; decision trees; Q-learning
            Monte Carlo tree search; principal component analysis; the |Viterbi algorithm
            the |expectation-maximization algorithm; naive Bayes; logistic regression; word2vec; dropout; batch normalization
            variational autoencoders; generative adversarial networks; beam search; genetic algorithms; k-nearest neighbours
            gradient boosting"""),
        "task": _items("""
            machine translation; named entity recognition; speech recognition; image classification; object detection
            sentiment analysis; question answering; part-of-speech tagging; text summarization; optical character recognition
            face recognition; dependency parsing; semantic segmentation; information retrieval; language modeling
            handwriting recognition; coreference resolution; image captioning; anomaly detection; relation extraction
            speaker identification; text classification"""),
        "field": _items("""
            machine learning; deep learning; natural language processing; computer vision; reinforcement learning; robotics
            computational linguistics; speech processing; data mining; information theory; artificial intelligence
            pattern recognition; knowledge representation; computational neuroscience; signal processing; bioinformatics
            cognitive science; human-computer interaction"""),
        "product": _items("""
            TensorFlow; PyTorch; scikit-learn; Keras; AlphaGo; Watson; Siri; Alexa; Google Translate; Vectorial Studio
            Lumen Vision; Helix Arm 3; Quantia Assistant; OpenNER Toolkit; Cobalt Speech Engine; Atlas Translate
            Sparrow Robot; DeepLens; Orion Chatbot; spaCy"""),
        "programlang": _items("""
            Python; Java; Lisp; Prolog; R; Julia; MATLAB; Scala; Haskell; Rust; JavaScript; Fortran; Perl; OCaml; Common Lisp
            Smalltalk; Lua"""),
        "metrics": _items("""
            F1 score; accuracy; BLEU; ROUGE; precision; recall; perplexity; mean squared error; word error rate
            mean average precision; area under the curve; cross-entropy; top-5 error rate; Matthews correlation coefficient"""),
        "conference": _items("""
            NeurIPS; ICML; ACL; EMNLP; CVPR; AAAI; IJCAI; ICLR; NAACL; COLING; ICCV; ECCV; KDD; Interspeech; ICRA"""),
        "organisation": _items("""
            DeepMind; OpenAI; Google; Microsoft Research; IBM; Nvidia; Meta AI; Vectorial Labs; Quantia; Helix Robotics
            Lumen Systems; Cobalt AI; Arclight Research; the |Northbridge Robotics Institute; the |Allen Institute
            the |Alan Turing Institute; Baidu; Sony AI"""),
        "university": _UNIVERSITIES,
        "country": _COUNTRIES,
        "location": _CITIES,
    },
}
# --------------------------------------------------------------------------- sentence patterns
#
# {type} an entity; {type:sub} one from a narrower list, labeled `type` ({organisation:label});
# {type+} a list of 2-4; {place} "City , Country" that fit; {#kind} a number or date (untagged);
# [a|b] a choice; <his>/<he>/<him> pronouns agreeing with the first person named in the sentence.

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "music": _lines("""
        {musicalartist} released <his> debut album , {album} , on {organisation:label} in {#year}
        {band} were formed in {location} in {#year} by {musicalartist} and {musicalartist}
        The single {song} reached number {#rank} on the [national|UK|Canadian|Irish] chart and stayed there for {#num} weeks
        {album} won the {award} in {#year} , beating records by {band} and {musicalartist}
        {musicalartist} plays {musicalinstrument} and {musicalinstrument} on most of the tracks
        The band 's sound combines {musicgenre} , {musicgenre} and [elements|traces|a hint] of {musicgenre}
        After leaving {band} , {musicalartist} began a solo career and signed with {organisation:label}
        {song} was written by {musicalartist} during a [long|difficult|three-month] tour of {country}
        The album features guest appearances from {musicalartist+}
        {band} headlined {event} in {#year} , playing to a crowd of more than {#big} people
        Critics compared the record to the early work of {band} , praising its [layered|sparse|warm|restless] production
        {musicalartist} was born in {place} , and learned to play the {musicalinstrument} at the age of {#age}
        Their [second|third] album , {album} , moved from {musicgenre} towards a more [melodic|polished] {musicgenre} sound
        The song was recorded at a studio in {location} with producer {musicalartist}
        {musicalartist} received a nomination for the {award} for <his> work on {album}
        In the music video for {song} , the members of {band} appear as [sailors|astronauts|ghosts|factory workers|chess players]
        {band} toured {country} and {country} in support of {album} , with {band} as the opening act
        The lineup was {musicalartist} on vocals , {musicalartist} on {musicalinstrument} and {musicalartist} on drums
        {album} was reissued in {#year} with {#num} previously unreleased tracks , including an early demo of {song}
        Although best known as a {musicgenre} singer , {musicalartist} also recorded an album of {musicgenre} standards
        {musicalartist} left the band in {#year} and was replaced by {musicalartist}
        The track {song} samples a {musicalinstrument} line from {band} 's {song}
        {organisation:label} dropped the band after the commercial failure of {album}
        Live recordings from {event} were later released as {album}
        {musicalartist} and {musicalartist} co-wrote {song} , which later became a hit for {band}
        The record sold over {#big} copies in its first week and was certified [gold|platinum|double platinum] in {country}
        {band} is a {musicgenre} band from {place}
        {organisation:orchestra} performed the piece in {location} under the direction of {musicalartist}
        {musicalartist} 's {#ord} studio album , {album} , was produced by {musicalartist} and released in {#month} {#year}
        The festival , held every summer in {location} , has featured {band+} among others
        Early influences on the band included {musicalartist} , {band} and the {musicgenre} records of the {#decade}
        {song} was included on the soundtrack of a {#year} film and later won the {award}
        {musicalartist} performed at {event} with a backing band that included {musicalartist} on {musicalinstrument}
        The reunion tour began in {location} and ended with {#num} sold-out nights at {location}
        The title track , {song} , features a {musicalinstrument} solo by {musicalartist}
        {band} signed a recording contract with {organisation:label} shortly after winning the {award}
        Most of {album} was recorded live in a single week in {location}
        {musicalartist} received the {award} in {#year} , alongside the [surviving |]members of {band}
        The {musicgenre} scene in {location} produced bands such as {band+}
        {musicalartist} taught {musicalinstrument} at {organisation} in {location} before joining {band}
        The band 's final concert took place at {location} on {#day} {#month} {#year}
        {song} and {song} were released as singles from {album}
        {musicalartist} described {album} as a tribute to the {musicgenre} of <his> childhood
        The remix by {musicalartist} became more successful than the original version of {song}
        {band} covered {song} on their {#year} tour , with {musicalartist} joining them on stage in {location}
        Reviewers singled out the {musicalinstrument} arrangements on {song} as the highlight of the record
        {organisation:label} released the compilation {album} , which collects singles by {band} and {band}
        Before forming {band} , {musicalartist} played {musicalinstrument} in a {musicgenre} group in {location}
        {musicalartist} , who had previously worked with {band} , produced <his> own album {album} in {#year}
    """),
    "science": _lines("""
        {scientist} [discovered|first isolated] {chemicalelement} in {#year} while working at {university}
        {theory} was first proposed by {scientist} in a paper published in {academicjournal}
        {scientist} was awarded the {award} for <his> work on {discipline}
        Compounds of {chemicalelement} and {chemicalelement} are widely used in the production of {chemicalcompound}
        {scientist} studied {discipline} at {university} before moving to {location} in {#year}
        Observations of {astronomicalobject} made with a telescope near {location} supported the predictions of {theory}
        The reaction between {chemicalcompound} and {chemicalcompound} releases heat and produces {chemicalcompound}
        {scientist} and {scientist} shared the {award} in {#year}
        The structure of {protein} was determined by {scientist} using X-ray crystallography
        {university} opened a new laboratory for {discipline} in {#year} , funded by {organisation}
        The spacecraft reached {astronomicalobject} after a journey of {#num} years
        {scientist} published more than {#hundreds} papers on {discipline} and {discipline}
        The enzyme {enzyme} breaks down {chemicalcompound} in the presence of {chemicalelement}
        Early work in {discipline} was shaped by the debate between {scientist} and {scientist}
        {scientist} , a professor of {discipline} at {university} , argued that {theory} could not explain the data
        Results from {organisation} confirmed the presence of {chemicalcompound} on {astronomicalobject}
        {scientist} received <his> doctorate from {university} in {#year} under the supervision of {scientist}
        The paper , published in {academicjournal} , described a new method for measuring {chemicalelement} in seawater
        {astronomicalobject} is the {#ord} brightest object in the night sky after {astronomicalobject}
        The {discipline} department at {university} is one of the oldest in {country}
        {scientist} was elected a fellow of {organisation} in {#year}
        Experiments at {organisation} measured the mass of the particle with an uncertainty of {#pct}
        The discovery of {protein} changed the way biologists think about {discipline}
        {scientist} spent {#num} years at an observatory in {country} mapping {astronomicalobject} and its moons
        Before the acceptance of {theory} , most researchers believed the [continents|species|stars] were fixed
        The conference on {discipline} held in {location} in {#year} was attended by {scientist+}
        {chemicalcompound} is produced industrially from {chemicalcompound} and {chemicalelement}
        Samples of {chemicalelement} were sent to laboratories in {country} , {country} and {country} for analysis
        A biography of {scientist} describes <his> rivalry with {scientist} over the discovery of {chemicalelement}
        The {award} is awarded every {#num} years for outstanding contributions to {discipline}
        {scientist} developed a new model of the atmosphere of {astronomicalobject} based on data from {organisation}
        <His> research on {protein} and {enzyme} was published in {academicjournal} and {academicjournal}
        {university} and {university} jointly operate a research station in {location}
        {scientist} showed that {chemicalcompound} could be synthesised at room temperature using a {chemicalelement} catalyst
        The mission to {astronomicalobject} was delayed for {#num} months because of a fault in the fuel system
        {scientist} is best known for <his> contributions to {theory} and to the study of {chemicalelement}
        Students at {university} can specialise in {discipline+}
        The element {chemicalelement} was named after {location} , where it was first isolated
        In the lab , {chemicalcompound} is usually stored away from {chemicalcompound} to avoid dangerous reactions
        {scientist} moved from {country} to {country} in {#year} to take up a chair at {university}
        The editors of {academicjournal} retracted the study after {scientist} failed to reproduce the results
        Measurements of {astronomicalobject} by {scientist} in {#year} were later confirmed by {organisation}
        {scientist} founded {organisation} together with colleagues from {university}
        Mutations in the gene coding for {protein} reduce the activity of {enzyme} by about {#pct}
        {scientist} used {discipline} to test {theory} , with results published in {academicjournal} in {#year}
    """),
    "politics": _lines("""
        {politician} was elected leader of the {politicalparty} in {#year}
        In the {election} , the {politicalparty} won {#seats} seats , its best result since {#year}
        {politician} served as minister of [finance|defence|health|education|foreign affairs|justice] under {politician}
        The {politicalparty} formed a coalition with the {politicalparty} after the {election}
        {politician} represented {location} in parliament from {#year} to {#year}
        {country} joined {organisation} in {#year} after a referendum
        {politician} , a member of the {politicalparty} , lost <his> seat to {politician} by fewer than {#hundreds} votes
        The treaty was signed in {location} by representatives of {country+}
        {politician} announced <his> resignation on {#day} {#month} , citing [health|family|personal] reasons
        Turnout in the {election} was {#pct} , the lowest in the history of {country}
        {organisation} criticised the government of {country} for its handling of the protests in {location}
        {politician} was born in {location} and worked as a [lawyer|teacher|doctor|journalist] before entering politics
        After {event} , {politician} called for closer ties between {country} and {country}
        The {politicalparty} campaigned on a platform of lower taxes and reform of {organisation}
        {politician} and {politician} held talks in {location} on trade and border security
        Opinion polls ahead of the {election} showed the {politicalparty} narrowly ahead of the {politicalparty}
        {politician} was appointed ambassador to {country} in {#year}
        The mayor of {location} , {politician} , is a member of the {politicalparty}
        {politician} defected from the {politicalparty} to the {politicalparty} in {#year}
        During {event} , {country} remained officially neutral
        The bill was passed by {#seats} votes to {#seats} , with {#num} members of the {politicalparty} voting against
        {politician} was the {politicalparty} candidate in the {election}
        Delegates from {country} walked out of the summit of {organisation} in {location}
        {politician} ran unsuccessfully for the presidency of {country} in {#year} and {#year}
        The {politicalparty} was founded in {location} in {#year} by {politician} and a group of trade unionists
        {politician} met {politician} , the prime minister of {country} , during a visit to {location}
        {organisation} sent observers to monitor the {election}
        After losing the {election} , {politician} stepped down as leader and was succeeded by {politician}
        {country} and {country} restored diplomatic relations in {#year} after a break of {#num} years
        {politician} was a vocal critic of {organisation} and of membership of {organisation}
        Protests in {location} and {location} forced the government to call the {election}
        The constituency of {location} has been held by the {politicalparty} since {#year}
        {politician} 's memoir describes the negotiations that ended {event}
        The {politicalparty} lost control of the city council of {location} for the first time in {#num} decades
        Under {politician} , {country} expanded its trade agreements with {country+}
        {politician} was sworn in as president of {country} on {#day} {#month} {#year}
        Members of the {politicalparty} voted to expel {politician} after the [scandal|leak|vote]
        A report by {organisation} estimated that {#pct} of voters in {location} did not receive ballots in time
        {politician} chaired the committee on foreign affairs and later served as speaker of the house
        The {politicalparty} and the {politicalparty} merged in {#year} to form the {politicalparty}
        {politician} , then minister of the interior , ordered an inquiry into the riots in {location}
        Relations between {country} and {organisation} deteriorated after {event}
        {person} , a journalist from {location} , interviewed {politician} shortly before the {election}
        {politician} was elected to the city council of {location} at the age of {#young} and to parliament {#num} years later
        The {politicalparty} government of {politician} collapsed after {#num} months in office
    """),
    "literature": _lines("""
        {writer} published <his> first novel , {book} , in {#year}
        {book} is a work of {literarygenre} set in {location} during {event:war}
        {writer} won the {award} for {book} in {#year}
        The poem {poem} first appeared in {magazine} in {#month} {#year}
        {writer} was born in {place} , and studied law before turning to writing
        {book} was translated into more than {#num} languages and adapted for television
        Critics have described {writer} as a master of {literarygenre}
        {writer} 's collection of poems includes {poem} and {poem}
        The novel follows {#num} generations of a family in {location}
        {writer} worked as an editor at {magazine} and later at {organisation}
        {book} was shortlisted for the {award} but lost to {book} by {writer}
        In <his> memoir , {writer} recalls meeting {writer} in {location} in the {#decade}
        {writer} wrote {book} while living in exile in {country}
        The {literarygenre} of {writer} influenced a generation of writers including {writer+}
        {organisation} published {book} in {#year} after it had been rejected by {#num} other publishers
        {poem} is an elegy written after the death of the poet 's friend , {person}
        {writer} is regarded as one of the founders of modern {literarygenre} in {country}
        The main character of {book} is based on {person} , a sailor the author met in {location}
        {writer} and {writer} were married in {location} in {#year}
        {book} , the {#ord} novel in the series , was published by {organisation} in {#year}
        {writer} began <his> career writing {literarygenre} for {magazine}
        The manuscript of {book} was discovered among the papers of {writer} after <his> death in {#year}
        {poem} , a long poem in [rhyming couplets|blank verse] , describes a journey from {location} to {location}
        {writer} received the {award} and the {award} in the same year
        The film adaptation of {book} was shot in {location} and {country}
        In {book} , {writer} returns to the themes of memory and exile that run through <his> earlier {literarygenre}
        The letters of {writer} to {person} were published in {#year}
        {book} was banned in {country} for {#num} years
        {writer} was a regular contributor to {magazine} , where <he> published {poem}
        Readers of {literarygenre} will recognise the influence of {writer} on {book}
        The jury of the {award} praised {book} as a bold experiment in {literarygenre}
        {writer} spent the last years of <his> life in {location} , working on an unfinished novel
        {book} and {book} are often read together as a loose trilogy
        At {event:festival} , {writer} read from {book} to an audience of several hundred
        {writer} translated {book} by {writer} , which had not previously been available in {country}
        The anthology , edited by {writer} for {organisation} , includes {poem+}
        {writer} described {literarygenre} as the most honest form of fiction
        {book} tells the story of a young woman who leaves {location} for {location} in search of her brother
        The sequel , {book} , was less well received by critics
        {person} , the publisher of {magazine} , championed the early work of {writer}
        {writer} was nominated for the {award} {#num} times but never won
        Like much of the {literarygenre} written after {event:war} , {book} is preoccupied with guilt
        {writer} and the painter {person} shared a house in {location} for {#num} years
    """),
    "ai": _lines("""
        {researcher} introduced {algorithm} in a paper presented at {conference} in {#year}
        Methods based on {algorithm} are widely used for {task} and {task}
        The system achieved a {metrics} of {#pct} on the benchmark , outperforming previous work on {task}
        {researcher} is a professor of {field} at {university}
        {product} is an open-source library written in {programlang}
        {organisation} released {product} in {#year} , a tool for {task}
        Early work on {task} relied on {algorithm} and hand-crafted features
        {researcher} and {researcher} showed that {algorithm} can be trained efficiently with {algorithm}
        The model was evaluated with {metrics} and {metrics} on {#num} standard data sets
        {researcher} received <his> PhD from {university} with a thesis on {field}
        {task} is an active area of research in {field} and has seen rapid progress since the {#decade}
        Researchers at {organisation} combined {algorithm} with {algorithm} to improve {task}
        The paper won the best paper award at {conference} in {#year}
        {researcher} left {university} in {#year} to lead the {field} group at {organisation}
        {product} was first demonstrated at {conference} and later integrated into {product}
        Most implementations of {algorithm} are written in {programlang} or {programlang}
        {researcher} argued that {metrics} is a poor measure of progress in {task}
        The workshop on {task} , co-located with {conference} , attracted more than {#hundreds} submissions
        The use of {algorithm} was popularised by {researcher} , who applied it to {task} in the {#decade}
        {organisation} opened a research lab in {location} focused on {field} and {field}
        The robot uses {algorithm} to plan its movements in real time
        The group of {researcher} at {university} developed {product} , a system for {task}
        A survey of {field} by {researcher} lists {algorithm+} as the most influential methods
        {programlang} became popular in {field} research thanks to libraries such as {product} and {product}
        The competition in {#year} was won by a team from {university} using {algorithm}
        {researcher} and colleagues reported a {metrics} of {#decimal} on the test set
        {country} announced a national strategy for {field} in {#year} , with funding for {university} and {university}
        Systems for {task} are typically evaluated with {metrics} , although {metrics} is also common
        {researcher} moved from {organisation} to {organisation} in {#year}
        The first version of {product} was written in {programlang} and later ported to {programlang}
        Variants of {algorithm} have been applied to {task} , {task} and {task}
        {researcher} chaired the program committee of {conference} in {#year}
        {organisation} acquired the startup behind {product} for an undisclosed sum
        {researcher} was one of the founders of {field} as an academic discipline in {country}
        Unlike {algorithm} , methods based on {algorithm} do not require labelled data
        Benchmarks for {task} were dominated by {algorithm} until around {#year}
        {researcher} gave the keynote at {conference} , describing recent advances in {field}
        The data set used for {task} contains {#big} annotated sentences collected in {country}
        {product} can be used from {programlang} , {programlang} and the command line
        A team from {university} trained {algorithm} on {#num} GPUs for a week
        {researcher} criticised the use of {algorithm} in systems for {task} because of its lack of transparency
        {organisation} and {university} signed an agreement to collaborate on {field}
        The tutorial at {conference} , given by {researcher} and {researcher} , covered {algorithm} and {algorithm}
    """),
}

# Sentences without entities: real NER sets have many, and they keep density honest.
_FILLERS: dict[str, tuple[str, ...]] = {
    "music": _lines("""
        The second half of the record is [slower|quieter] and more reflective
        The band recorded most of the songs in just [two|three|four] days
        Critics were divided over the new direction , but sales remained strong
        The tour was cancelled after the drummer injured his wrist
        Several songs on the album deal with loss , memory and distance
        The single was re-recorded for the compilation with a different arrangement
        Tickets for the reunion concerts sold out within [hours|minutes|a day]
        The lyrics were written in a single night , according to the liner notes
        Only {#num} copies of the original pressing are known to exist
        The group took a long break after the tour to work on side projects
        The chorus is sung in unison by the whole band
        Her voice on the final track has been described as fragile and haunting
        The album cover shows an empty street at dawn
    """),
    "science": _lines("""
        The sample was cooled to minus {#num} degrees before the measurement
        The results were consistent with earlier measurements , within the margin of error
        The experiment was repeated several times with different concentrations
        Most of the instruments had to be built by hand in the workshop
        The reaction is slow at room temperature but speeds up when a catalyst is added
        The telescope was upgraded in {#year} with a larger mirror
        Funding for the project was cut after only two years
        The team collected more than {#big} measurements over the course of the study
        The hypothesis remained controversial for several decades
        Each sample was weighed , dissolved and analysed twice
        The data suggest that the effect is much smaller than previously thought
    """),
    "politics": _lines("""
        The government survived the confidence vote by a narrow margin
        The debate in parliament lasted late into the night
        Several ministers resigned in protest over the budget
        Voters went to the polls on a cold and rainy Sunday
        The proposal was rejected by a large majority of members
        The coalition agreement was signed after {#num} weeks of negotiations
        Critics argued that the new law would weaken local councils
        The result was challenged in court but eventually upheld
        The party 's manifesto promised free school meals and higher pensions
        Campaigning was suspended for two days as a mark of respect
        Turnout was highest among voters over the age of {#old}
    """),
    "literature": _lines("""
        The novel was written over a period of almost ten years
        The first edition had a print run of only {#hundreds} copies
        Many of the stories are told from the point of view of children
        The book ends with an open question rather than a resolution
        Reviews at the time were mixed , though sales were strong
        The author revised the final chapter several times before publication
        The poem is written in short , unrhymed lines
        Her later work is darker and more experimental
        The narrator never reveals his real name
        The story was later expanded into a full-length novel
        Several chapters were cut by the publisher before the book went to print
    """),
    "ai": _lines("""
        The model was trained for three days on a single machine
        The results were not reproduced by other groups
        The training data was collected from public web pages and cleaned by hand
        Adding more layers did not improve performance
        The code and the trained models were released under an open licence
        The approach is simple , fast and surprisingly hard to beat
        Errors were most common on short and ambiguous inputs
        Annotators disagreed on about one in ten examples
        The benchmark has since been criticised for containing duplicate examples
        Training was stopped early when the validation loss stopped improving
    """),
}
_GENERIC_FILLERS = _lines("""
    This was confirmed in a later interview
    The details of the agreement were never made public
    Little is known about the early years
    It was the first time this had happened in more than a decade
    The decision was reversed {#num} years later
""")

_GENERIC_PREFIXES = _lines("""
    In {#year} ,
    In {#month} {#year} ,
    Later that year ,
    By the late {#decade} ,
    During the {#decade} ,
    Two years later ,
    At the time ,
    However ,
    Meanwhile ,
    @According to a {#year} interview ,
    Shortly afterwards ,
    As a result ,
    Despite this ,
    In the same year ,
    On {#day} {#month} {#year} ,
""")
# "@": the prefix needs the pattern to open with its subject ("While living in Oslo , Anna Berg ...").
_PREFIXES: dict[str, tuple[str, ...]] = {
    "music": _lines("""
        @After a long tour of {country} ,
        @While living in {location} ,
        @Inspired by {musicalartist} ,
        Following the success of {album} ,
        After the release of {song} ,
    """),
    "science": _lines("""
        @While working at {university} ,
        @In a lecture at {university} ,
        @Building on the work of {scientist} ,
        Following the discovery of {chemicalelement} ,
        In a follow-up study published in {academicjournal} ,
    """),
    "politics": _lines("""
        @Speaking in {location} ,
        Following the {election} ,
        Shortly after {event} ,
        Ahead of the {election} ,
    """),
    "literature": _lines("""
        @In an interview with {magazine} ,
        @After moving to {location} ,
        @Like many writers of <his> generation ,
        After the publication of {book} ,
    """),
    "ai": _lines("""
        @In a talk at {conference} ,
        @While working at {organisation} ,
        @Building on {algorithm} ,
        Following the release of {product} ,
    """),
}
_GENERIC_SUFFIXES = _lines("""
    although the exact date is disputed
    according to contemporary reports
    a decision that drew mixed reactions
    which surprised many observers
    as reported at the time
    though details remain scarce
""")
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "music": _lines("""
        shortly before moving to {location}
        with {musicalartist} producing
        a move that disappointed fans of {band}
        and the record was later reissued by {organisation:label}
        according to {musicalartist}
    """),
    "science": _lines("""
        according to a report in {academicjournal}
        with support from {organisation}
        a result later confirmed by {scientist}
    """),
    "politics": _lines("""
        according to a spokesperson for the {politicalparty}
        a claim denied by {politician}
        in a move criticised by {organisation}
    """),
    "literature": _lines("""
        according to <his> biographer {person}
        a decision <he> later regretted
        as {writer} noted in a review for {magazine}
    """),
    "ai": _lines("""
        according to a blog post by {organisation}
        using code written in {programlang}
        as reported at {conference}
    """),
}
_JOINERS = (", and", ";", ", while", ", although")
_NO_PREFIX_START = frozenset({"in", "during", "after", "before", "while", "following", "under", "unlike", "at", "like",
                              "although", "despite", "since"})
_CONNECTIVES = tuple(p for p in _GENERIC_PREFIXES if "{" not in p and not p.startswith("@"))


def _timeless(pattern: str) -> bool:
    """Statements like "X is a rock band" take no "In 1998 ," before and no ", which surprised
    many observers" after them."""
    return bool({"is", "are", "born", "can"} & set(pattern.split()))


def _takes_prefix(pattern: str) -> bool:
    """Whether "In 1998 , ..." can go before the pattern: not before another adverbial opening."""
    return pattern.split()[0].lower() not in _NO_PREFIX_START and not _timeless(pattern)


def _prefix_fits(prefix: str, pattern: str) -> bool:
    """A "@" prefix ("While living in Oslo ,") only before a pattern that opens with a person or band."""
    if not prefix.startswith("@"):
        return True
    first = _SLOT_RE.match(pattern)
    return first is not None and first.group(1) in _PERSON_TYPES | {"band"}

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
           "December")
_ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")

_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)+|'s\b|\w+(?:['-]\w+)*(?<!'s)|[^\w\s]")
_SLOT_RE = re.compile(r"\{([^{}]+)\}")
_CHOICE_RE = re.compile(r"\[([^\[\]]*)\]")
_PRONOUNS = {"male": {"<his>": "his", "<he>": "he", "<him>": "him", "<His>": "His", "<He>": "He"},
             "female": {"<his>": "her", "<he>": "she", "<him>": "her", "<His>": "Her", "<He>": "She"}}


@lru_cache(maxsize=8192)
def _tokenize(text: str) -> tuple[str, ...]:
    """Whitespace tokens with punctuation and possessive 's split off ("Paris ," / "Halley 's")."""
    return tuple(_TOKEN_RE.findall(text))


def domain_entity_types(domain: str) -> list[str]:
    """The entity types a domain's sentences are labeled with (every slot its patterns use)."""
    _check_domain(domain)
    return sorted(_slot_types(domain))


@cache
def _slot_types(domain: str) -> frozenset[str]:
    patterns = _TEMPLATES[domain] + _FILLERS[domain] + _PREFIXES[domain] + _SUFFIXES[domain]
    types = {slot.rstrip("+").split(":")[0] for p in patterns for slot in _SLOT_RE.findall(p) if not slot.startswith("#")}
    if "place" in types:
        types = (types - {"place"}) | {"location", "country"}
    return frozenset(types)


def _check_domain(domain: str) -> None:
    if domain not in _TEMPLATES:
        raise UserError(f"unknown demo domain {domain!r}; choose one of {', '.join(DOMAINS)}")


# --------------------------------------------------------------------------- generation


class _SentenceMaker:
    """Renders patterns of one domain into (tokens, tags); all randomness from one rng."""

    def __init__(self, domain: str, rng: random.Random):
        _check_domain(domain)
        self.domain = domain
        self.rng = rng
        self.lexicon = {**_SHARED, **_LEXICON[domain]}
        self.templates = _TEMPLATES[domain]
        self.fillers = _FILLERS[domain] + _GENERIC_FILLERS
        self.prefixes = _PREFIXES[domain]
        self.suffixes = _SUFFIXES[domain]
        patterns = self.templates + self.fillers + self.prefixes + self.suffixes
        slots = {slot.rstrip("+") for p in patterns for slot in _SLOT_RE.findall(p) if not slot.startswith("#")}
        missing = sorted(t for t in slots if t not in self.lexicon and t not in _PERSON_TYPES | {"place"})
        if missing:
            raise KeyError(f"demo domain {domain!r} uses entity types without a lexicon: {missing}")

    # ---- pieces: (tokens, entity type or None)
    def _number(self, kind: str) -> list[str]:
        r = self.rng
        if kind == "year":
            return [str(r.randint(1952, 2023))]
        if kind == "num":
            n = r.randint(2, 12)
            return [_NUMBER_WORDS[n - 2] if r.random() < 0.5 else str(n)]
        if kind == "big":
            return [f"{r.choice((5, 10, 12, 20, 25, 40, 50, 75, 120, 250, 400)) * 1000:,}"]
        if kind == "hundreds":
            return [str(r.randint(1, 9) * 100 + r.choice((0, 0, 50)))]
        if kind == "pct":
            value = f"{r.randint(10, 95)}" if r.random() < 0.6 else f"{r.uniform(10, 95):.1f}"
            return [value, "%"] if r.random() < 0.7 else [value, "per", "cent"]
        if kind == "decimal":
            return [f"{r.uniform(0.55, 0.97):.2f}" if r.random() < 0.5 else f"{r.uniform(55, 97):.1f}"]
        if kind == "seats":
            return [str(r.randint(12, 340))]
        if kind == "rank":
            return [str(r.randint(1, 40))]
        if kind == "age":
            return [str(r.randint(5, 16))]
        if kind == "young":
            return [str(r.randint(21, 34))]
        if kind == "old":
            return [str(r.choice((50, 60, 65, 70, 75)))]
        if kind == "ord":
            return [r.choice(_ORDINALS)]
        if kind == "month":
            return [r.choice(_MONTHS)]
        if kind == "day":
            return [str(r.randint(1, 28))]
        if kind == "decade":
            return [f"{r.randrange(1950, 2020, 10)}s"]
        raise KeyError(f"unknown number slot {{#{kind}}}")

    def _person(self, typ: str, gender: str | None) -> list[str]:
        r = self.rng
        if typ == "musicalartist" and gender is None and r.random() < 0.2:
            return list(_tokenize(r.choice(_STAGE_NAMES)))
        gender = gender or r.choice(("male", "female"))
        first = r.choice(_FIRST_MALE if gender == "male" else _FIRST_FEMALE)
        middle = [f"{r.choice('ABCDEFGHJKLMNPRSTW')}."] if typ in ("scientist", "researcher") and r.random() < 0.2 else []
        return [first, *middle, *r.choice(_SURNAMES).split()]

    def _entity(self, typ: str, state: dict) -> list[tuple[list[str], str | None]]:
        r = self.rng
        used: set[str] = state["used"]
        if typ == "place":
            city, country = r.choice(_CITY_PAIRS)
            return [(list(_tokenize(city)), "location"), ([","], None), (list(_tokenize(country)), "country")]
        for _ in range(6):
            if typ in _PERSON_TYPES:
                gender = None if state["named"] else state["gender"]
                pieces = [(self._person(typ, gender), typ)]
                state["named"] = True
            else:
                entry = r.choice(self.lexicon[typ])
                entry = entry.replace("<year>", str(r.randint(1952, 2023)))
                entry = entry.replace("<country>", r.choice(_COUNTRIES)).replace("<city>", r.choice(_CITIES))
                article, _, name = entry.rpartition("|")
                label = typ.split(":")[0]
                pieces = ([(list(_tokenize(article)), None)] if article.strip() else []) + [(list(_tokenize(name)), label)]
            key = " ".join(pieces[-1][0])
            if key not in used:
                break
        used.add(key)
        return pieces

    def _render(self, template: str, state: dict) -> list[tuple[list[str], str | None]]:
        template = template.lstrip("@")
        for marker, word in _PRONOUNS[state["gender"]].items():
            template = template.replace(marker, word)
        while "[" in template:
            template = _CHOICE_RE.sub(lambda m: self.rng.choice(m.group(1).split("|")), template)
        pieces: list[tuple[list[str], str | None]] = []
        for i, part in enumerate(_SLOT_RE.split(template)):
            if i % 2 == 0:
                if part.strip():
                    pieces.append((list(_tokenize(part)), None))
            elif part.startswith("#"):
                pieces.append((self._number(part[1:]), None))
            elif part.endswith("+"):
                typ = part[:-1]
                n = self.rng.choice((2, 2, 3, 3, 4))
                for k in range(n):
                    if k:
                        pieces.append((["and"] if k == n - 1 else [","], None))
                    pieces.extend(self._entity(typ, state))
            else:
                pieces.extend(self._entity(part, state))
        return [p for p in pieces if p[0]]

    def sentence(self) -> tuple[list[str], list[str]]:
        """One sentence of this domain as (tokens, BIO tags), MIN_TOKENS..MAX_TOKENS long."""
        r = self.rng
        for _ in range(20):
            state = {"used": set(), "gender": r.choice(("male", "female")), "named": False}
            if r.random() < 0.1:
                filler = r.choice(self.fillers)
                clauses = []
                if r.random() < 0.25 and _takes_prefix(filler):
                    clauses.append(self._render(r.choice(_CONNECTIVES), state))
                clauses.append(self._render(filler, state))
            else:
                main = r.choice(self.templates)
                clauses = []
                if r.random() < 0.3 and _takes_prefix(main):
                    prefixes = self.prefixes if r.random() < 0.4 else _GENERIC_PREFIXES
                    # one date per sentence: "In 1998 , X released Y in 2005" reads wrong
                    prefixes = [p for p in prefixes if _prefix_fits(p, main) and not ("{#" in main and "{#" in p)]
                    if prefixes:
                        clauses.append(self._render(r.choice(prefixes), state))
                clauses.append(self._render(main, state))
                roll = r.random()
                if roll < 0.12:
                    second = r.choice(self.templates)
                    joiner = r.choice(_JOINERS)
                    if joiner.split()[-1] in second.split():  # not "..., although X , although Y"
                        joiner = ";"
                    clauses.append([(list(_tokenize(joiner)), None)])
                    clauses.append(self._render(second, state))
                elif roll < 0.35 and not _timeless(main):
                    suffixes = self.suffixes if r.random() < 0.5 else _GENERIC_SUFFIXES
                    clauses.append([([","], None)])
                    clauses.append(self._render(r.choice(suffixes), state))
            tokens, tags = _assemble(clauses)
            if MIN_TOKENS <= len(tokens) <= MAX_TOKENS:
                return tokens, tags
        return tokens, tags


def _assemble(clauses: list[list[tuple[list[str], str | None]]]) -> tuple[list[str], list[str]]:
    """Join clauses into BIO-tagged tokens: capitalise the sentence start, lower-case literal
    clause starts after it, fix a/an before filled-in names, end with a full stop."""
    tokens: list[str] = []
    tags: list[str] = []
    for c, clause in enumerate(clauses):
        for p, (toks, typ) in enumerate(clause):
            toks = list(toks)
            # Patterns are capitalised as sentence starts; proper nouns are always slots, so a literal
            # clause start that is not an acronym reads lower-case inside the sentence.
            if c > 0 and p == 0 and typ is None and not toks[0].isupper():
                toks[0] = toks[0][:1].lower() + toks[0][1:]
            tokens.extend(toks)
            if typ is None:
                tags.extend("O" for _ in toks)
            else:
                tags.extend([f"B-{typ}"] + [f"I-{typ}"] * (len(toks) - 1))
    if tokens:
        tokens[0] = tokens[0][:1].upper() + tokens[0][1:]
    for i in range(len(tokens) - 1):
        # Patterns spell their own articles right; only an article before a filled-in name may need fixing.
        if tags[i] == "O" and tokens[i].lower() in ("a", "an") and tags[i + 1] != "O":
            article = "an" if tokens[i + 1][:1].lower() in "aeio" else "a"
            tokens[i] = article.capitalize() if tokens[i][0].isupper() else article
    tokens.append(".")
    tags.append("O")
    return tokens, tags


# --------------------------------------------------------------------------- the data set


@dataclass
class DemoData:
    """The five demo corpora: TC and DC unlabeled, LC/dev/test labeled with BIO tags."""

    tc: Corpus
    dc: Corpus
    lc: Corpus
    dev: Corpus
    test: Corpus
    target_domain: str

    def by_role(self) -> dict[Role, Corpus]:
        return {Role.TC: self.tc, Role.DC: self.dc, Role.LC: self.lc, Role.DEV: self.dev, Role.TEST: self.test}


def _corpus(rows: list[tuple[list[str], list[str]]], domains: list[str], prefix: str, labeled: bool, name: str) -> Corpus:
    return Corpus(tokens=[t for t, _ in rows], tags=[g for _, g in rows] if labeled else None,
                  fields={"id": [f"{prefix}-{i:06d}" for i in range(len(rows))], "domain": domains}, name=name)


def _dc_chunks(rng: random.Random, makers: dict[str, _SentenceMaker], test_texts: set[str], dc_size: int,
               chunk: int) -> Iterator[Corpus]:
    """DC in chunks of `chunk` sentences (ids dc-000000..., a `domain` field), drawn from `rng`
    in one fixed sequence, so the chunking never changes the data."""
    dc_domains = [DOMAINS[i % len(DOMAINS)] for i in range(dc_size)]
    rng.shuffle(dc_domains)
    for start in range(0, dc_size, chunk):
        rows: list[tuple[list[str], list[str]]] = []
        domains = dc_domains[start:start + chunk]
        for domain in domains:
            tokens, tags = makers[domain].sentence()
            while " ".join(tokens) in test_texts:
                tokens, tags = makers[domain].sentence()
            rows.append((tokens, tags))
        yield Corpus(tokens=[t for t, _ in rows], fields={"id": [f"dc-{i:06d}" for i in range(start, start + len(rows))],
                                                          "domain": domains}, name="demo-dc")


def _target_splits(seed: int, target_domain: str, tc_size: int, lc_size: int, dev_size: int, test_size: int):
    """(rng, makers, test, lc, dev, tc): the target-domain splits, and the generator state DC continues from."""
    _check_domain(target_domain)
    if min(tc_size, lc_size, dev_size, test_size) < 1:
        raise UserError("every demo corpus needs at least one sentence")
    rng = random.Random(seed)
    makers = {d: _SentenceMaker(d, rng) for d in DOMAINS}

    need = test_size + lc_size + dev_size + tc_size
    target: list[tuple[list[str], list[str]]] = []
    seen: set[str] = set()
    for _ in range(need * 20):
        tokens, tags = makers[target_domain].sentence()
        text = " ".join(tokens)
        if text not in seen:
            seen.add(text)
            target.append((tokens, tags))
            if len(target) == need:
                break
    if len(target) < need:
        raise RuntimeError(f"could only generate {len(target)} distinct {target_domain} sentences of {need}")
    test, rest = target[:test_size], target[test_size:]
    lc, dev, tc = rest[:lc_size], rest[lc_size:lc_size + dev_size], rest[lc_size + dev_size:]
    return rng, makers, test, lc, dev, tc


def generate_demo(seed: int = 13, target_domain: str = "music", dc_size: int = 6000, tc_size: int = 400,
                  lc_size: int = 150, dev_size: int = 150, test_size: int = 200) -> DemoData:
    """The demo data set, a pure function of its arguments.

    TC, LC, dev and test are distinct target-domain sentences (deduplicated by text, so test
    shares no sentence with the others); DC mixes all domains in equal shares and contains
    no test sentence, so pretraining on a selection never sees evaluation text.
    """
    if dc_size < 1:
        raise UserError("every demo corpus needs at least one sentence")
    rng, makers, test, lc, dev, tc = _target_splits(seed, target_domain, tc_size, lc_size, dev_size, test_size)
    test_texts = {" ".join(t) for t, _ in test}

    dc = Corpus.concat(_dc_chunks(rng, makers, test_texts, dc_size, DC_CHUNK), name="demo-dc")

    def same(n: int) -> list[str]:
        return [target_domain] * n

    return DemoData(
        tc=_corpus(tc, same(len(tc)), "tc", False, "demo-tc"),
        dc=dc,
        lc=_corpus(lc, same(len(lc)), "lc", True, "demo-lc"),
        dev=_corpus(dev, same(len(dev)), "dev", True, "demo-dev"),
        test=_corpus(test, same(len(test)), "test", True, "demo-test"),
        target_domain=target_domain,
    )


# --------------------------------------------------------------------------- workspace


def _demo_stamp(seed: int, target_domain: str, dc_size: int) -> dict:
    return {"version": GENERATOR_VERSION, "seed": seed, "target_domain": target_domain, "dc_size": dc_size}


def _demo_in_place(ws: Workspace, stamp: dict) -> bool:
    """True when the workspace already holds exactly this demo with its roles (then nothing is written)."""
    settings = ws.settings()
    recorded = settings.get("demo") or {}
    if any(recorded.get(k) != v for k, v in stamp.items()):
        return False
    if settings.get("target_domain") != stamp["target_domain"] or settings.get("demo_seed") != stamp["seed"]:
        return False
    roles = ws.roles()
    hashes = recorded.get("hashes") or {}
    for role, name in DEMO_NAMES.items():
        if roles.get(role) != name or not ws.has_corpus(name) or ws.corpus_info(name).hash != hashes.get(name):
            return False
    return True


def write_demo_workspace(root: str | Path | None, seed: int = 13, target_domain: str = "music",
                         dc_size: int = 6000, progress: Progress | None = None) -> Workspace:
    """Store the demo corpora as demo-tc/-dc/-lc/-dev/-test with their roles and the target domain.

    Idempotent: when the folder already holds this demo, nothing is written (no file changes).
    A demo corpus from another seed is replaced; a user's corpus under a demo name is not.
    DC is generated and written in chunks (`DC_CHUNK` sentences), so `dc_size` may be ten
    million on a small machine; the result equals `generate_demo(...).dc`.
    """
    ws = Workspace(root)
    stamp = _demo_stamp(seed, target_domain, dc_size)
    if _demo_in_place(ws, stamp):
        return ws
    if dc_size < 1:
        raise UserError("every demo corpus needs at least one sentence")
    rng, makers, test, lc, dev, tc = _target_splits(seed, target_domain, 400, 150, 150, 200)
    test_texts = {" ".join(t) for t, _ in test}
    report = progress or (lambda f, m="": None)
    source = f"demo (seed {seed})"
    hashes: dict[str, str] = {}

    def replace(name: str) -> bool:
        return ws.has_corpus(name) and ws.corpus_info(name).source.startswith("demo (")

    # DC first: it continues the generator right after the target splits, as in generate_demo.
    dc_name = DEMO_NAMES[Role.DC]
    tmp = temp_path_for(ws.corpora_dir / f"{dc_name}.demo.parquet")
    writer = None
    try:
        done = 0
        for chunk in _dc_chunks(rng, makers, test_texts, dc_size, DC_CHUNK):
            table = chunk.to_arrow()
            writer = writer or pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
            done += len(chunk)
            report(0.9 * done / dc_size, f"generated {done:,}/{dc_size:,} DC sentences")
        writer.close()
        writer = None
        report(0.9, "storing DC in the workspace")
        hashes[dc_name] = ws.import_corpus(tmp, role=Role.DC, name=dc_name, fmt="parquet", overwrite=replace(dc_name),
                                           source=source).hash
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)

    def same(n: int) -> list[str]:
        return [target_domain] * n

    small = {Role.TC: _corpus(tc, same(len(tc)), "tc", False, "demo-tc"),
             Role.LC: _corpus(lc, same(len(lc)), "lc", True, "demo-lc"),
             Role.DEV: _corpus(dev, same(len(dev)), "dev", True, "demo-dev"),
             Role.TEST: _corpus(test, same(len(test)), "test", True, "demo-test")}
    for role, corpus in small.items():
        name = DEMO_NAMES[role]
        hashes[name] = ws.save_corpus(corpus, name, role=role, source=source, overwrite=replace(name)).hash
    ws.update_settings(target_domain=target_domain, demo_seed=seed, demo={**stamp, "hashes": hashes})
    report(1.0, f"demo workspace with a {dc_size:,}-sentence DC")
    return ws


def ensure_demo_workspace(root: str | Path | None = None, seed: int = 13, target_domain: str = "music") -> Workspace:
    """The workspace at `root`, with the demo written into it only if it holds no corpus yet."""
    ws = Workspace(root)
    if ws.list_corpora():
        return ws
    return write_demo_workspace(ws.root, seed=seed, target_domain=target_domain)
