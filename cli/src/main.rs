fn main() {
    println!("attention-lab");
}
